//! A `From` impl run by `.into()` (std's blanket `Into` calls it back).
// expect: CONVERSIONS
use std::sync::atomic::{AtomicU64, Ordering};
use whirl::prelude::*;

static CONVERSIONS: AtomicU64 = AtomicU64::new(0);

struct Celsius(f64);
struct Fahrenheit(f64);

impl From<Celsius> for Fahrenheit {
    fn from(c: Celsius) -> Self {
        CONVERSIONS.fetch_add(1, Ordering::Relaxed); //~ CONVERSIONS
        Fahrenheit(c.0 * 9.0 / 5.0 + 32.0)
    }
}

#[derive(Message)]
struct Reading(f64);

#[process]
struct Thermometer {
    last: f64,
}

#[process]
impl Thermometer {
    #[handle]
    fn reading(&mut self, Reading(c): Reading) {
        let f: Fahrenheit = Celsius(c).into();
        self.last = f.0;
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Thermometer { last: 0.0 }).post(Reading(21.5));
    rt.shutdown_graceful();
}
