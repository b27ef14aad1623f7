//! Class 3: the same for a periodic timer.
use std::rc::Rc;
use std::time::Duration;
use whirl::prelude::*;

#[derive(Message)]
struct Tick;

#[process]
struct Clock;

#[process]
impl Clock {
    #[handle]
    fn tick(&mut self, _: Tick, ctx: &mut Ctx<Self>) {
        ctx.post_every(Duration::from_millis(10), Rc::new(1u8));
    }
}

fn main() {}
