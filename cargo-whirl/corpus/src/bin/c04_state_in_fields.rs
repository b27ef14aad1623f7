//! The whirl way: state in the process's fields, shared only by messages.
// expect:
use std::collections::HashMap;
use whirl::prelude::*;

#[derive(Message)]
struct Put(String, u64);

#[derive(Message)]
struct Get(String, Addr<Client>);

#[derive(Message)]
struct Reply(Option<u64>);

#[process]
struct Store {
    map: HashMap<String, u64>,
}

#[process]
impl Store {
    #[handle]
    fn put(&mut self, Put(k, v): Put) {
        self.map.insert(k, v);
    }

    #[handle]
    fn get(&mut self, Get(k, to): Get) {
        let _ = to.post(Reply(self.map.get(&k).copied()));
    }
}

#[process]
struct Client {
    last: Option<u64>,
}

#[process]
impl Client {
    #[handle]
    fn reply(&mut self, Reply(v): Reply) {
        self.last = v;
    }
}

fn main() {
    let rt = Runtime::new();
    let store = rt.spawn(Store {
        map: HashMap::new(),
    });
    let client = rt.spawn(Client { last: None });
    let _ = store.post(Put("k".into(), 1));
    let _ = store.post(Get("k".into(), client));
    rt.shutdown_graceful();
}
