// Only functions and statics touch shared state; a type does not.
#[whirl::allow_shared(reason = "a statistic")]
struct Counter(u64);

fn main() {
    let _ = Counter(0);
}
