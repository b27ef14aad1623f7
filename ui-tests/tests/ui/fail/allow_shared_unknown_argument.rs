// The one argument is `reason`.
#[whirl::allow_shared(because = "a statistic")]
fn count() {}

fn main() {}
