use whirl::prelude::*;

#[derive(Message)]
struct Hit;

#[derive(Message)]
struct Reset;

#[process]
struct Counter {
    hits: u64,
}

#[process]
impl Counter {
    #[handle]
    fn hit(&mut self, _: Hit) {
        self.hits += 1;
    }
}

fn main() {
    let rt = Runtime::new();
    let counter = rt.spawn(Counter { hits: 0 });
    let _ = counter.post(Reset);
}
