//! A generic message is a message whenever its parameters are isolated; one process can
//! handle two instantiations.
use whirl::prelude::*;

#[derive(Message)]
struct Envelope<T> {
    seq: u64,
    body: T,
}

#[derive(Message)]
struct Batch<T, const N: usize>([T; N]);

#[derive(Message, Debug)]
struct Sum(ReplyTo<u64>);

#[process]
struct Collector {
    total: u64,
}

#[process]
impl Collector {
    #[handle]
    fn text(&mut self, msg: Envelope<String>) {
        self.total += msg.seq + msg.body.len() as u64;
    }

    #[handle]
    fn bytes(&mut self, msg: Envelope<Vec<u8>>) {
        self.total += msg.seq + msg.body.len() as u64;
    }

    #[handle]
    fn batch(&mut self, Batch(numbers): Batch<u64, 3>) {
        self.total += numbers.iter().sum::<u64>();
    }

    #[handle]
    fn sum(&mut self, Sum(reply): Sum) {
        let _ = reply.send(self.total);
    }
}

fn main() {
    let rt = Runtime::builder().threads(1).build().expect("the runtime starts");
    let collector = rt.spawn(Collector { total: 0 });
    collector
        .post(Envelope {
            seq: 1,
            body: String::from("ab"),
        })
        .unwrap();
    collector
        .post(Envelope {
            seq: 10,
            body: vec![0u8; 20],
        })
        .unwrap();
    collector.post(Batch([100, 200, 300])).unwrap();
    assert_eq!(collector.request_with(Sum).call().unwrap(), 3 + 30 + 600);
    rt.shutdown_graceful();
}
