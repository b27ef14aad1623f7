//! The process's state holds a handle whose `Deref` hands out a static: `self.config.x`
//! reads shared, mutable configuration.
// expect: SETTINGS
use std::ops::Deref;
use std::sync::RwLock;
use whirl::prelude::*;

static SETTINGS: RwLock<u32> = RwLock::new(0);

#[derive(Isolated)]
struct Settings;

impl Deref for Settings {
    type Target = RwLock<u32>;
    fn deref(&self) -> &RwLock<u32> {
        &SETTINGS //~ SETTINGS
    }
}

#[derive(Message)]
struct Bump;

#[process]
struct Tuner {
    settings: Settings,
}

#[process]
impl Tuner {
    #[handle]
    fn bump(&mut self, _b: Bump) {
        if let Ok(mut value) = self.settings.write() {
            *value += 1;
        }
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Tuner { settings: Settings }).post(Bump);
    rt.shutdown_graceful();
}
