//! Generic processes: the state's type parameter must be `Isolated`, its handlers can take
//! generic messages, and const parameters work too.
use whirl::prelude::*;

#[derive(Message)]
struct Put<T>(T);

#[derive(Message, Debug)]
struct Len(ReplyTo<usize>);

#[derive(Message, Debug)]
struct Last<T: Isolated>(ReplyTo<Option<T>>);

#[process]
struct Store<T> {
    items: Vec<T>,
}

#[process]
impl<T> Store<T>
where
    T: Isolated + Clone,
{
    #[handle]
    fn put(&mut self, Put(item): Put<T>) {
        self.items.push(item);
    }

    #[handle]
    fn len(&mut self, Len(reply): Len) {
        let _ = reply.send(self.items.len());
    }

    #[handle]
    fn last(&mut self, Last(reply): Last<T>) {
        let _ = reply.send(self.items.last().cloned());
    }
}

/// Const parameters work too.
#[process]
struct Window<const N: usize> {
    last: [u64; N],
    next: usize,
}

#[derive(Message)]
struct Sample(u64);

#[derive(Message, Debug)]
struct Total(ReplyTo<u64>);

#[process]
impl<const N: usize> Window<N> {
    #[handle]
    fn sample(&mut self, Sample(value): Sample) {
        self.last[self.next % N] = value;
        self.next += 1;
    }

    #[handle]
    fn total(&mut self, Total(reply): Total) {
        let _ = reply.send(self.last.iter().sum());
    }
}

fn main() {
    let rt = Runtime::builder().threads(1).build().expect("the runtime starts");
    let words = rt.spawn(Store::<String> { items: Vec::new() });
    words.post(Put(String::from("a"))).unwrap();
    words.post(Put(String::from("b"))).unwrap();
    assert_eq!(words.request_with(Len).call().unwrap(), 2);
    assert_eq!(words.request_with(Last).call().unwrap().as_deref(), Some("b"));
    let numbers = rt.spawn(Store::<(u8, u8)> { items: Vec::new() });
    numbers.post(Put((1, 2))).unwrap();
    assert_eq!(numbers.request_with(Last).call().unwrap(), Some((1, 2)));
    let window = rt.spawn(Window::<2> { last: [0; 2], next: 0 });
    for value in [1, 10, 100] {
        window.post(Sample(value)).unwrap();
    }
    assert_eq!(window.request_with(Total).call().unwrap(), 110);
    rt.shutdown_graceful();
}
