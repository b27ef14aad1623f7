use whirl::prelude::*;

#[derive(Message)]
struct Put<T>(T);

#[process]
struct Store<T> {
    items: Vec<T>,
}

#[process]
impl<T: Send + 'static> Store<T> {
    #[handle]
    fn put(&mut self, Put(item): Put<T>) {
        self.items.push(item);
    }
}

fn main() {}
