//! A refused answer is reported once, naming the inner type that fails: `RwLock` in
//! `Result<Vec<Arc<RwLock<u8>>>, Failure>`, `Rc` in `Result<Result<u8, Rc<str>>, Failure>`.
use std::rc::Rc;
use std::sync::{Arc, RwLock};
use whirl::prelude::*;

#[derive(Message)]
struct Get;

#[derive(Message)]
struct Parse;

#[process]
struct Store {
    n: u8,
}

#[process]
impl Store {
    #[handle]
    fn get(&mut self, _: Get) -> Result<Vec<Arc<RwLock<u8>>>, Failure> {
        Ok(Vec::new())
    }

    #[handle]
    fn parse(&mut self, _: Parse) -> Result<Result<u8, Rc<str>>, Failure> {
        Ok(Ok(self.n))
    }
}

fn main() {}
