//! `#[message(bypass_admission)]` on a struct and on an enum, alone or with a cost.
use whirl::prelude::*;

#[derive(Message)]
#[message(bypass_admission)]
struct Reply(u64);

#[derive(Message)]
#[message(bypass_admission, cost = 2)]
enum Control {
    Stop,
    #[message(cost = 5)]
    Drain,
}

#[derive(Message)]
struct Request;

fn main() {
    const _: () = assert!(<Reply as Message>::BYPASSES_ADMISSION);
    const _: () = assert!(<Control as Message>::BYPASSES_ADMISSION);
    const _: () = assert!(!<Request as Message>::BYPASSES_ADMISSION);
    assert_eq!(Control::Stop.cost(), 2);
    assert_eq!(Control::Drain.cost(), 5);
    assert_eq!(Reply(1).cost(), 1);
}
