//! An estimator of isolated data travels with its principal.
use std::collections::HashMap;
use whirl::prelude::*;
use whirl::Estimate;

#[derive(Isolated)]
struct Table {
    weights: HashMap<String, u64>,
}

impl Estimate for Table {
    fn cost(&self, _: &Principal, message_type: &'static str, message_cost: u64) -> u64 {
        message_cost * self.weights.get(message_type).copied().unwrap_or(1)
    }
}

fn main() {
    let mut weights = HashMap::new();
    weights.insert("Search".to_owned(), 10);
    let principal = Principal::new(1, 1, 0).with_estimator(Table { weights });
    assert_eq!(principal.estimate_cost("Search", 2), 20);
    assert_eq!(principal.estimate_cost("Read", 2), 2);
}
