//! Class 2: generic recursive and mutually recursive owned types are isolated when their
//! parameters are.
use whirl::prelude::*;

#[derive(Message)]
struct Tree<T> {
    value: T,
    children: Vec<Tree<T>>,
}

#[derive(Isolated)]
struct Even<T> {
    value: T,
    next: Option<Box<Odd<T>>>,
}

#[derive(Isolated)]
struct Odd<T> {
    next: Vec<Even<T>>,
}

#[derive(Message)]
struct Chain(Even<String>);

#[derive(Message, Debug)]
struct Count(ReplyTo<usize>);

#[process]
struct Counter {
    seen: usize,
}

#[process]
impl Counter {
    #[handle]
    fn tree(&mut self, tree: Tree<String>) {
        self.seen += 1 + tree.children.len() + tree.value.len();
    }

    #[handle]
    fn chain(&mut self, Chain(even): Chain) {
        self.seen += even.value.len() + even.next.map_or(0, |odd| odd.next.len());
    }

    #[handle]
    fn count(&mut self, Count(reply): Count) {
        let _ = reply.send(self.seen);
    }
}

fn isolated<T: Isolated>() {}

fn main() {
    isolated::<Tree<Vec<u8>>>();
    isolated::<Even<u64>>();
    isolated::<Odd<(String, u8)>>();
    let rt = Runtime::builder().threads(1).build().expect("the runtime starts");
    let counter = rt.spawn(Counter { seen: 0 });
    counter
        .post(Tree { value: "ab".to_owned(), children: vec![Tree { value: String::new(), children: vec![] }] })
        .unwrap();
    let odd = Odd { next: vec![Even { value: "x".to_owned(), next: None }] };
    counter.post(Chain(Even { value: "abc".to_owned(), next: Some(Box::new(odd)) })).unwrap();
    assert_eq!(counter.request_with(Count).call().unwrap(), 4 + 4);
    rt.shutdown_graceful();
}
