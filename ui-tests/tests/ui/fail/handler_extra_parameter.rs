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
    fn hit(&mut self, _: Hit, _ctx: &mut Ctx<Self>, times: u64) {
        self.hits += times;
    }
}

fn main() {}
