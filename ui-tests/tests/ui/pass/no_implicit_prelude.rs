//! Generated code names everything by absolute path, so it compiles without the prelude.
#![no_implicit_prelude]
#![allow(dead_code)]

extern crate std;
extern crate whirl;

use std::string::String;
use whirl::prelude::*;

#[derive(Message)]
#[message(cost = 2)]
struct Greet {
    name: String,
}

#[derive(Message)]
enum Mood {
    Happy,
    Grumpy(u8),
}

#[derive(Isolated)]
struct Memory<T> {
    last: std::option::Option<T>,
}

#[process(group = "greeters")]
struct Greeter {
    greeted: u64,
    memory: Memory<String>,
}

#[process]
impl Greeter {
    #[started]
    fn begin(&mut self) {}

    #[handle]
    fn greet(&mut self, msg: Greet, _ctx: &mut Ctx<Self>) -> std::result::Result<(), Failure> {
        self.greeted += msg.cost();
        self.memory.last = std::option::Option::Some(msg.name);
        std::result::Result::Ok(())
    }

    #[handle]
    fn mood(&mut self, _: Mood) {}

    #[terminated]
    fn end(&mut self, _reason: &ExitReason) {}
}

#[process(system)]
struct Watcher;

#[process]
impl Watcher {
    #[handle]
    fn down(&mut self, _: Down) {}
}

fn main() {
    let rt = Runtime::new();
    let greeter = rt.spawn(Greeter {
        greeted: 0,
        memory: Memory {
            last: std::option::Option::None,
        },
    });
    let _ = greeter.post(Greet {
        name: std::string::ToString::to_string("ada"),
    });
    let _ = greeter.post(Mood::Grumpy(1));
    let _ = greeter.post(Mood::Happy);
    let _ = rt.spawn(Watcher);
    rt.shutdown_graceful();
}
