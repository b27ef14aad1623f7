// The reason is a string literal, not an expression.
const WHY: &str = "a statistic";

#[whirl::allow_shared(reason = WHY)]
fn count() {}

fn main() {}
