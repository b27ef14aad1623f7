//! Immutable data shared through `Arc`: `Arc<str>`, `Arc<[T]>`, `Arc<Vec<T>>`, `Arc` of a user
//! type without interior mutability.
use std::collections::HashMap;
use std::sync::Arc;

use whirl::prelude::*;

#[derive(Isolated)]
struct Catalogue {
    prices: HashMap<String, u64>,
}

#[derive(Message)]
struct Quote<T: Isolated + Sync> {
    customer: Arc<str>,
    items: Arc<Vec<T>>,
    discounts: Arc<[u8]>,
    catalogue: Arc<Catalogue>,
    reply: ReplyTo<u64>,
}

#[process]
struct Pricer;

#[process]
impl Pricer {
    #[handle]
    fn quote(&mut self, msg: Quote<String>) {
        let total: u64 = msg
            .items
            .iter()
            .filter_map(|i| msg.catalogue.prices.get(i))
            .sum();
        let discount = msg.discounts.first().copied().unwrap_or(0) as u64;
        assert_eq!(&*msg.customer, "ada");
        let _ = msg.reply.send(total - discount);
    }
}

fn main() {
    let rt = Runtime::builder().threads(1).build().expect("the runtime starts");
    let catalogue = Arc::new(Catalogue {
        prices: HashMap::from([("tea".to_owned(), 3), ("cake".to_owned(), 5)]),
    });
    let items = Arc::new(vec!["tea".to_owned(), "cake".to_owned()]);
    let pricer = rt.spawn(Pricer);
    let total = pricer
        .request_with(|reply| Quote {
            customer: Arc::from("ada"),
            items: Arc::clone(&items),
            discounts: Arc::from(&[1u8][..]),
            catalogue: Arc::clone(&catalogue),
            reply,
        }).call()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(total, 7);
    rt.shutdown_graceful();
}
