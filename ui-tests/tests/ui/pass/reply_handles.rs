//! One-shot reply handles in messages, answered by the process, awaited by the caller.
use std::time::Duration;

use whirl::prelude::*;

#[derive(Message, Debug)]
struct Lookup {
    key: String,
    reply: ReplyTo<Option<u64>>,
}

#[derive(Message, Debug)]
struct Keys(ReplyTo<Vec<String>>);

#[process]
struct Directory {
    entries: Vec<(String, u64)>,
}

#[process]
impl Directory {
    #[handle]
    fn lookup(&mut self, Lookup { key, reply }: Lookup) {
        let found = self
            .entries
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v);
        let _ = reply.send(found);
    }

    #[handle]
    fn keys(&mut self, Keys(reply): Keys) {
        let _ = reply.send(self.entries.iter().map(|(k, _)| k.clone()).collect());
    }
}

fn main() {
    let rt = Runtime::builder().threads(1).build().expect("the runtime starts");
    let dir = rt.spawn(Directory {
        entries: vec![("one".into(), 1), ("two".into(), 2)],
    });
    let two = dir
        .request_with(|reply| Lookup {
            key: "two".into(),
            reply,
        }).call()
        .unwrap();
    assert_eq!(two, Some(2));
    let keys = dir.request_with(Keys).timeout(Duration::from_secs(5)).call().unwrap();
    assert_eq!(keys, ["one", "two"]);
    rt.shutdown_graceful();
}
