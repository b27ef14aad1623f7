//! `#[message(cost = ...)]` sets `Message::cost`, which cost-based predicates read.
#![allow(dead_code)]
use whirl::prelude::*;

#[derive(Message)]
struct Cheap;

#[derive(Message)]
#[message(cost = 10)]
struct Fixed;

#[derive(Message)]
#[message(cost = 1 + self.body.len() as u64 / 1024)]
struct Upload {
    body: Vec<u8>,
}

const QUERY_COST: u64 = 7;

#[derive(Message)]
#[message(cost = 2)]
enum Request {
    Ping,
    #[message(cost = QUERY_COST)]
    Query(String),
    #[message(cost = self.weight())]
    Batch {
        items: Vec<u32>,
    },
}

impl Request {
    fn weight(&self) -> u64 {
        match self {
            Request::Batch { items } => items.len() as u64,
            _ => 0,
        }
    }
}

fn main() {
    assert_eq!(Cheap.cost(), 1);
    assert_eq!(Fixed.cost(), 10);
    assert_eq!(
        Upload {
            body: vec![0; 4096]
        }
        .cost(),
        5
    );
    assert_eq!(Request::Ping.cost(), 2);
    assert_eq!(Request::Query(String::new()).cost(), 7);
    assert_eq!(
        Request::Batch {
            items: vec![1, 2, 3]
        }
        .cost(),
        3
    );
}
