//! A handler changes the process environment, which every thread shares (a known API).
// expect: set_var
use whirl::prelude::*;

#[derive(Message)]
struct Configure(String);

#[process]
struct Configurator;

#[process]
impl Configurator {
    #[handle]
    fn configure(&mut self, Configure(value): Configure) {
        // SAFETY: none; the checker reports it.
        unsafe { std::env::set_var("MODE", value) }; //~ set_var
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Configurator).post(Configure("fast".into()));
    rt.shutdown_graceful();
}
