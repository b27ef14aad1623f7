use whirl::prelude::*;

#[process]
struct Watcher;

#[process]
impl Watcher {
    #[handle]
    fn down(&mut self, notice: Down) {
        let _ = notice;
    }
}

fn main() {}
