//! Class 2: a process may be named after a library type; what counts is what it holds.
use whirl::prelude::*;

#[process]
struct Mutex<T> {
    items: Vec<T>,
}

#[derive(Message)]
struct Put(u64);

#[derive(Message, Debug)]
struct Len(ReplyTo<usize>);

#[process]
impl<T: Isolated + From<u64>> Mutex<T> {
    #[handle]
    fn put(&mut self, Put(v): Put) {
        self.items.push(T::from(v));
    }

    #[handle]
    fn len(&mut self, Len(reply): Len) {
        let _ = reply.send(self.items.len());
    }
}

fn main() {
    let rt = Runtime::builder().threads(1).build().expect("the runtime starts");
    let store = rt.spawn(Mutex::<u64> { items: Vec::new() });
    store.post(Put(1)).unwrap();
    assert_eq!(store.request_with(Len).call().unwrap(), 1);
    rt.shutdown_graceful();
}
