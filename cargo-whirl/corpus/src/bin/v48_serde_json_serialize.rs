//! A `Serialize` impl run by a third-party crate's generic code: `serde_json::to_string`
//! calls the user's `serialize` back, which touches a static.
// expect: SERIALIZED
use serde::ser::{Serialize, Serializer};
use std::sync::atomic::{AtomicU64, Ordering};
use whirl::prelude::*;

static SERIALIZED: AtomicU64 = AtomicU64::new(0);

struct Reading {
    celsius: i64,
}

impl Serialize for Reading {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        SERIALIZED.fetch_add(1, Ordering::Relaxed); //~ SERIALIZED
        serializer.serialize_i64(self.celsius)
    }
}

#[derive(Message)]
struct Measure(i64);

#[process]
struct Sensor {
    json: String,
}

#[process]
impl Sensor {
    #[handle]
    fn measure(&mut self, Measure(celsius): Measure) {
        self.json = serde_json::to_string(&Reading { celsius }).unwrap_or_default();
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt
        .spawn(Sensor {
            json: String::new(),
        })
        .post(Measure(21));
    rt.shutdown_graceful();
}
