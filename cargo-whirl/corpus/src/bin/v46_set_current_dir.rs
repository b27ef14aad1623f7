//! A handler changing the working directory of the whole OS process.
// expect: set_current_dir
use whirl::prelude::*;

#[derive(Message)]
struct Enter(String);

#[process]
struct Shell;

#[process]
impl Shell {
    #[handle]
    fn enter(&mut self, Enter(dir): Enter) {
        let _ = std::env::set_current_dir(dir); //~ set_current_dir
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Shell).post(Enter("/tmp".into()));
    rt.shutdown_graceful();
}
