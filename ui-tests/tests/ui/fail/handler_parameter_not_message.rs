use whirl::prelude::*;

#[process]
struct Echo;

#[process]
impl Echo {
    #[handle]
    fn text(&mut self, text: String) {
        let _ = text;
    }
}

fn main() {}
