//! Every accepted handler shape: with or without the context, returning `()`, `Result<(),
//! Failure>` or `Result<(), E>` for any error `E`; the attribute written with its path.
use std::fmt;
use std::io;

use whirl::prelude::*;

#[derive(Message)]
struct A;
#[derive(Message)]
struct B;
#[derive(Message)]
struct C;
#[derive(Message)]
struct D;
#[derive(Message)]
struct E;

#[process]
struct Flexible {
    seen: u32,
}

#[process]
impl Flexible {
    #[handle]
    fn a(&mut self, _: A) {
        self.seen += 1;
    }

    #[handle]
    fn b(&mut self, _: B, _ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        self.seen += 1;
        Ok(())
    }

    #[handle]
    fn c(&mut self, _: C) -> Result<(), io::Error> {
        self.seen += 1;
        Ok(())
    }

    #[whirl::handle]
    fn d(&mut self, _: D, _ctx: &mut whirl::Ctx<Flexible>) -> Result<(), fmt::Error> {
        self.seen += 1;
        Ok(())
    }

    #[handle]
    #[allow(clippy::unused_unit)]
    fn e(&mut self, _: E) -> () {
        self.seen += 1;
    }
}

fn main() {
    let rt = Runtime::builder().threads(1).build().expect("the runtime starts");
    let p = rt.spawn(Flexible { seen: 0 });
    p.post(A).unwrap();
    p.post(B).unwrap();
    p.post(C).unwrap();
    p.post(D).unwrap();
    p.post(E).unwrap();
    rt.shutdown_graceful();
}
