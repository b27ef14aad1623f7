//! A message's `#[message(cost = ...)]` reaches the group's predicate through `Offer::cost`.

use whirl::admission::Offer;
use whirl::prelude::*;

#[derive(Message)]
#[message(cost = self.rows)]
struct Query {
    rows: u64,
}

#[derive(Message)]
struct Ping;

#[process]
struct Db {
    served: u64,
}

#[process]
impl Db {
    #[handle]
    fn query(&mut self, _q: Query) {
        self.served += 1;
    }

    #[handle]
    fn ping(&mut self, _p: Ping) {}
}

#[test]
fn predicates_see_each_messages_cost() {
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let cheap_only = rt
        .group("db")
        .threads(1)
        .predicate(|offer: &Offer<'_>| offer.cost() <= 10)
        .build()
        .expect("build group");
    let db = rt.spawner().group(&cheap_only).spawn(Db { served: 0 });
    assert!(db.post(Query { rows: 10 }).is_ok());
    match db.post(Query { rows: 11 }) {
        Err(PostError::Rejected(q)) => assert_eq!(q.rows, 11, "the message comes back"),
        other => panic!("expected a rejection, got {other:?}"),
    }
    // Without a cost attribute a message costs 1.
    assert!(db.post(Ping).is_ok());
    rt.block_until_idle();
    let counts = cheap_only.counts();
    assert_eq!((counts.handled, counts.rejected), (2, 1));
    rt.shutdown_graceful();
}

/// The answer to work the group already admitted: never refused.
#[derive(Message)]
#[message(bypass_admission)]
struct QueryDone {
    rows: u64,
}

#[process]
struct Handler {
    answers: u64,
}

#[process]
impl Handler {
    #[handle]
    fn query(&mut self, _q: Query) {}

    #[handle]
    fn done(&mut self, done: QueryDone) {
        self.answers += done.rows;
    }
}

#[test]
fn bypassing_messages_skip_the_predicate() {
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let nothing = rt
        .group("closed")
        .threads(1)
        .predicate(|_: &Offer<'_>| false)
        .build()
        .expect("build group");
    let handler = rt.spawner().group(&nothing).spawn(Handler { answers: 0 });
    assert!(matches!(
        handler.post(Query { rows: 1 }),
        Err(PostError::Rejected(_))
    ));
    assert!(handler.post(QueryDone { rows: 3 }).is_ok());
    rt.block_until_idle();
    let counts = nothing.counts();
    assert_eq!((counts.handled, counts.rejected), (1, 1));
    rt.shutdown_graceful();
}
