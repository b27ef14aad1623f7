//! Class 2: recursive types are accepted when owned: directly, through `Box`/`Option`/`Vec`,
//! through `Self`, and as process state.
use whirl::prelude::*;

#[derive(Message, Clone)]
struct Tree {
    value: u64,
    children: Vec<Tree>,
}

#[derive(Isolated, Clone)]
struct List {
    head: u64,
    tail: Option<Box<Self>>,
}

#[derive(Message)]
struct Keep(List);

#[derive(Message, Debug)]
struct Sum(ReplyTo<u64>);

#[process]
struct Forest {
    trees: Vec<Tree>,
    list: Option<List>,
}

fn sum(tree: &Tree) -> u64 {
    tree.value + tree.children.iter().map(sum).sum::<u64>()
}

#[process]
impl Forest {
    #[handle]
    fn plant(&mut self, tree: Tree) {
        self.trees.push(tree);
    }

    #[handle]
    fn keep(&mut self, Keep(list): Keep) {
        self.list = Some(list);
    }

    #[handle]
    fn sum(&mut self, Sum(reply): Sum) {
        let mut total: u64 = self.trees.iter().map(sum).sum();
        let mut node = self.list.as_ref();
        while let Some(n) = node {
            total += n.head;
            node = n.tail.as_deref();
        }
        let _ = reply.send(total);
    }
}

fn main() {
    let rt = Runtime::builder().threads(1).build().expect("the runtime starts");
    let forest = rt.spawn(Forest { trees: Vec::new(), list: None });
    let leaf = Tree { value: 2, children: Vec::new() };
    forest.post(Tree { value: 1, children: vec![leaf.clone(), leaf] }).unwrap();
    forest
        .post(Keep(List { head: 10, tail: Some(Box::new(List { head: 20, tail: None })) }))
        .unwrap();
    assert_eq!(forest.request_with(Sum).call().unwrap(), 35);
    rt.shutdown_graceful();
}
