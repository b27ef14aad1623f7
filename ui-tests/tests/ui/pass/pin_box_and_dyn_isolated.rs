//! Class 4: `Pin<Box<T>>` owns `T`; `Box<dyn Trait>` is isolated when the trait requires
//! `Isolated`.
use std::pin::Pin;
use whirl::prelude::*;

trait Job: Isolated {
    fn run(&self) -> u64;
}

#[derive(Isolated)]
struct Square(u64);

impl Job for Square {
    fn run(&self) -> u64 {
        self.0 * self.0
    }
}

#[derive(Message)]
struct Submit(Box<dyn Job>);

#[derive(Message, Debug)]
struct Total(ReplyTo<u64>);

#[process]
struct Runner {
    pinned: Pin<Box<u64>>,
    jobs: Vec<Box<dyn Job>>,
}

#[process]
impl Runner {
    #[handle]
    fn submit(&mut self, Submit(job): Submit) {
        self.jobs.push(job);
    }

    #[handle]
    fn total(&mut self, Total(reply): Total) {
        let _ = reply.send(*self.pinned + self.jobs.iter().map(|j| j.run()).sum::<u64>());
    }
}

fn main() {
    let rt = Runtime::builder().threads(1).build().expect("the runtime starts");
    let runner = rt.spawn(Runner { pinned: Box::pin(1), jobs: Vec::new() });
    runner.post(Submit(Box::new(Square(3)))).unwrap();
    runner.post(Submit(Box::new(Square(4)))).unwrap();
    assert_eq!(runner.request_with(Total).call().unwrap(), 26);
    rt.shutdown_graceful();
}
