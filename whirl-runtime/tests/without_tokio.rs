//! A tokio-based future awaited by an async handler of a runtime built without the `tokio`
//! feature: the process fails, and its failure says which feature to enable.
//!
//! Compiled only without the feature: `cargo test -p whirl-runtime --test without_tokio` (CI
//! runs it on its own, since the workspace's tests unify whirl-runtime's features).
#![cfg(not(feature = "tokio"))]

use std::sync::mpsc;
use std::time::Duration;

use whirl_runtime::__private::HandlerFuture;
use whirl_runtime::request::Sender as _;
use whirl_runtime::{Ctx, Failure, Isolated, Message, Process, Runtime};

struct Napper;
struct Nap;
// SAFETY: a unit struct is owned data. (I8)
unsafe impl Isolated for Nap {}
impl Message for Nap {}

// SAFETY: the state is a unit struct; the only message is `Nap`.
unsafe impl Process for Napper {
    type Message = Nap;

    fn handle(&mut self, _: Nap, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        let future: HandlerFuture<'_> = Box::pin(async {
            // Needs tokio's timer driver: panics outside a tokio runtime's context.
            tokio::time::sleep(Duration::from_millis(1)).await;
            None
        });
        // SAFETY: called from `handle`, about to return; the future borrows nothing (I13).
        unsafe { ctx.__suspend(|| "Nap", future) };
        Ok(())
    }
}

impl whirl_runtime::Handles<Nap> for Napper {
    fn into_message(msg: Nap) -> Nap {
        msg
    }
}

#[test]
fn a_tokio_future_without_the_feature_fails_naming_the_feature() {
    let rt = Runtime::new();
    let napper = rt.spawn(Napper);
    let (tx, rx) = mpsc::channel();
    let _watch = napper.watch(move |down| {
        let _ = tx.send(down.reason.to_string());
    });
    napper.post(Nap).expect("posted");
    let reason = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the watcher is told");
    assert!(reason.contains("Tokio 1.x runtime"), "{reason}");
    assert!(reason.contains("`tokio` feature"), "{reason}");
    rt.shutdown_graceful();
}
