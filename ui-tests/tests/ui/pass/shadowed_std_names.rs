//! User items named like prelude and core items do not change what generated code means.
#![allow(dead_code, non_camel_case_types)]

use whirl::prelude::*;

struct Result;
struct Option;
struct Some;
struct None;
struct Ok;
struct Err;
struct Box;
struct Send;
struct Sized;
struct From;
struct Into;
struct PhantomData;
struct Infallible;
type u64 = std::primitive::u8;
type bool = std::primitive::u8;
type str = [std::primitive::u8];
mod core {}

#[derive(Message)]
#[message(cost = 3)]
struct Hit {
    path: String,
}

#[derive(Message)]
enum Either<T> {
    Left(T),
    Right,
}

#[process(group = "web")]
struct Counter<T> {
    hits: usize,
    last: std::option::Option<T>,
}

#[process]
impl<T: Isolated> Counter<T> {
    #[handle]
    fn hit(&mut self, _: Hit, _: &mut Ctx<Self>) -> std::result::Result<(), Failure> {
        self.hits += 1;
        std::result::Result::Ok(())
    }

    #[handle]
    fn either(&mut self, msg: Either<T>) {
        if let Either::Left(value) = msg {
            self.last = std::option::Option::Some(value);
        }
    }
}

fn main() {
    let rt = Runtime::builder().threads(1).build().expect("the runtime starts");
    let web = rt.group("web").threads(1).build().expect("build group");
    let counter = rt.spawn(Counter::<String> {
        hits: 0,
        last: std::option::Option::None,
    });
    counter.post(Hit { path: "/".into() }).unwrap();
    counter.post(Either::Left(String::from("x"))).unwrap();
    counter.post(Either::<String>::Right).unwrap();
    rt.block_until_idle();
    // `group = "web"` placed it there.
    assert_eq!(web.counts().handled, 3);
    rt.shutdown_graceful();
}
