//! An estimator of isolated data travels with its principal; it tells message types apart by
//! type, not by name.
use std::any::TypeId;
use std::collections::HashMap;
use whirl::admission::{Estimate, MessageType};
use whirl::prelude::*;

#[derive(Message)]
struct Search;

#[derive(Message)]
struct Read;

#[derive(Isolated)]
struct Table {
    weights: HashMap<TypeId, u64>,
}

impl Estimate for Table {
    fn cost(&self, _: &Principal, message: MessageType, message_cost: u64) -> u64 {
        message_cost * self.weights.get(&message.id()).copied().unwrap_or(1)
    }
}

fn main() {
    let mut weights = HashMap::new();
    weights.insert(TypeId::of::<Search>(), 10);
    let principal = Principal::builder(1)
        .priority(1)
        .estimator(Table { weights })
        .build().expect("a valid principal");
    assert_eq!(principal.estimate_cost(MessageType::of::<Search>(), 2), 20);
    assert_eq!(principal.estimate_cost(MessageType::of::<Read>(), 2), 2);
}
