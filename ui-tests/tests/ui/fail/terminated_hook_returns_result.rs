use whirl::prelude::*;

#[process]
struct Service;

#[process]
impl Service {
    #[terminated]
    fn close(&mut self, _reason: &ExitReason) -> Result<(), Failure> {
        Ok(())
    }
}

fn main() {}
