use whirl::prelude::*;

#[derive(Message)]
struct Hit {
    path: String,
}

#[process]
struct Counter {
    hits: u64,
}

#[process]
impl Counter {
    #[handle]
    fn hit(&mut self, msg: &Hit) {
        self.hits += msg.path.len() as u64;
    }
}

fn main() {}
