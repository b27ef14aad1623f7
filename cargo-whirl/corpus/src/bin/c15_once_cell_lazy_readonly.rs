//! A read-only `once_cell::sync::Lazy<Vec<String>>`: immutable after its initialiser ran.
// expect:
use once_cell::sync::Lazy;
use whirl::prelude::*;

static NAMES: Lazy<Vec<String>> = Lazy::new(|| vec!["ada".into(), "grace".into()]);

#[derive(Message)]
struct Greet(usize);

#[process]
struct Greeter {
    greeted: Vec<String>,
}

#[process]
impl Greeter {
    #[handle]
    fn greet(&mut self, Greet(i): Greet) {
        if let Some(name) = NAMES.get(i) {
            self.greeted.push(name.clone());
        }
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt
        .spawn(Greeter {
            greeted: Vec::new(),
        })
        .post(Greet(1));
    rt.shutdown_graceful();
}
