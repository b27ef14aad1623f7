//! A handler appends to a static `Mutex<Vec<_>>`: a log every process writes to.
// expect: LOG
use std::sync::Mutex;
use whirl::prelude::*;

static LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());

#[derive(Message)]
struct Note(String);

#[process]
struct Logger;

#[process]
impl Logger {
    #[handle]
    fn note(&mut self, Note(text): Note) {
        let lock = LOG.lock(); //~ LOG
        if let Ok(mut log) = lock {
            log.push(text);
        }
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Logger).post(Note("hello".into()));
    rt.shutdown_graceful();
}
