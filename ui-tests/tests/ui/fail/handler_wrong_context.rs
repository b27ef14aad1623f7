use whirl::prelude::*;

#[derive(Message)]
struct Hit;

#[process]
struct Counter {
    hits: u64,
}

#[process]
impl Counter {
    #[handle]
    fn hit(&mut self, _: Hit, ctx: Ctx<Self>) {
        let _ = ctx;
    }
}

fn main() {}
