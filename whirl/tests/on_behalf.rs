//! `request(msg).on_behalf(&p)` with `post` and `ask`: the predicate weighs the message as the
//! given principal's work.

use whirl::admission::{MessagePredicate, Offer};
use whirl::prelude::*;

struct VipsOnly;

impl MessagePredicate for VipsOnly {
    fn admit(&self, offer: &Offer<'_>) -> bool {
        offer.priority() >= 5
    }
}

#[derive(Message)]
struct Knock;

#[process]
struct Door {
    opened: u32,
}

#[process]
impl Door {
    #[handle]
    fn knock(&mut self, _: Knock) -> u32 {
        self.opened += 1;
        self.opened
    }
}

#[test]
fn the_predicate_sees_the_principal_given() {
    let runtime = Runtime::new();
    let group = runtime
        .group("vip")
        .threads(1)
        .predicate(VipsOnly)
        .build()
        .unwrap();
    // The process's own principal is not a VIP.
    let door = group
        .spawner()
        .principal(
            Principal::builder(1)
                .priority(1)
                .build()
                .expect("a valid principal"),
        )
        .spawn(Door { opened: 0 });
    assert!(matches!(door.post(Knock), Err(PostError::Rejected(Knock))));
    let vip = Principal::builder(2)
        .priority(9)
        .build()
        .expect("a valid principal");
    door.request(Knock).on_behalf(&vip).post().unwrap();
    let low = Principal::builder(3)
        .priority(4)
        .build()
        .expect("a valid principal");
    assert!(door.request(Knock).on_behalf(&low).post().is_err());
    let answer = block_on(door.request(Knock).on_behalf(&vip).ask()).unwrap();
    assert_eq!(answer, 2);
    runtime.shutdown_graceful();
}

/// Polls a future to completion on this thread.
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    use std::sync::Arc;
    use std::task::{Context, Poll, Wake, Waker};
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::park();
    }
}
