//! A generic process: the state's type parameter must be `Isolated`, and its handlers can take
//! generic messages.
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

fn main() {
    let rt = Runtime::builder().threads(1).build();
    let words = rt.spawn(Store::<String> { items: Vec::new() });
    words.post(Put(String::from("a"))).unwrap();
    words.post(Put(String::from("b"))).unwrap();
    assert_eq!(words.call(Len).unwrap(), 2);
    assert_eq!(words.call(Last).unwrap().as_deref(), Some("b"));
    let numbers = rt.spawn(Store::<(u8, u8)> { items: Vec::new() });
    numbers.post(Put((1, 2))).unwrap();
    assert_eq!(numbers.call(Last).unwrap(), Some((1, 2)));
    rt.shutdown_graceful();
}
