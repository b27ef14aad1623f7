//! The escape hatch of the paper's section VI-C, used correctly: processes that knowingly share
//! an internally synchronised store, declared loudly, confined to a group that declares it.
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use whirl::prelude::*;
use whirl::DeclaredProcess;
use whirl::SharesState;

/// A store with its own fine-grained locking, as the paper's in-memory database.
#[derive(Default)]
struct Store {
    rows: RwLock<HashMap<u64, String>>,
}

#[derive(Message)]
struct Put(u64, String);

#[derive(Message, Debug)]
struct Get(u64, ReplyTo<Option<String>>);

#[process(
    unsafe(shares_state = "the in-memory store locks per operation; one process in front of \
                           it would serialise every reader"),
    group = "db"
)]
struct Shard {
    #[shared]
    store: Arc<Store>,
    writes: u64,
}

#[process]
impl Shard {
    #[handle]
    fn put(&mut self, Put(key, value): Put) -> Result<(), Failure> {
        let mut rows = self
            .store
            .rows
            .write()
            .map_err(|_| Failure::new("poisoned"))?;
        rows.insert(key, value);
        self.writes += 1;
        Ok(())
    }

    #[handle]
    fn get(&mut self, Get(key, reply): Get) -> Result<(), Failure> {
        let rows = self
            .store
            .rows
            .read()
            .map_err(|_| Failure::new("poisoned"))?;
        let _ = reply.send(rows.get(&key).cloned());
        Ok(())
    }
}

fn main() {
    assert!(<Shard as SharesState>::REASON.starts_with("the in-memory store"));
    assert_eq!(<Shard as DeclaredProcess>::GROUP, Some("db"));

    let rt = Runtime::builder().threads(1).build().expect("the runtime starts");
    let db = rt
        .group("db")
        .threads(2)
        .shares_state("shards share one in-memory store")
        .build().expect("build group");
    let store = Arc::new(Store::default());
    let writer = rt.spawner().group(&db).spawn(Shard {
            store: Arc::clone(&store),
            writes: 0,
        });
    let reader = rt.spawner().group(&db).spawn(Shard {
            store: Arc::clone(&store),
            writes: 0,
        });
    writer.post(Put(7, "seven".into())).unwrap();
    rt.block_until_idle();
    assert_eq!(
        reader.request_with(|r| Get(7, r)).call().unwrap().as_deref(),
        Some("seven")
    );

    // Spawned without naming a group, it goes to the group it declares.
    let placed = rt.spawn(Shard {
        store: Arc::clone(&store),
        writes: 0,
    });
    assert_eq!(placed.request_with(|r| Get(7, r)).call().unwrap().as_deref(), Some("seven"));

    // Anywhere else, the process fails at once, before running any of its code.
    let stray = rt.spawner().group(rt.default_group()).spawn(Shard { store, writes: 0 });
    rt.block_until_idle();
    assert!(stray.is_terminated());
    rt.shutdown_graceful();
}
