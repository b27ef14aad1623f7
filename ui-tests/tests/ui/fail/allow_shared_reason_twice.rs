// One reason.
#[whirl::allow_shared(reason = "a statistic", reason = "and a cache")]
fn count() {}

fn main() {}
