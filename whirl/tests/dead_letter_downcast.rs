//! A dead letter of a `#[process]` process holds the message that was posted, not the
//! generated message enum: `letter.downcast::<Ping>()` recovers it.

use std::sync::mpsc;
use std::sync::{Arc, Barrier};

use whirl::prelude::*;
use whirl::{DeadLetter, SharedClient};

#[derive(Message, Debug, PartialEq)]
struct Ping(u32);

#[derive(Message)]
struct Block;

/// Handles one ping, then terminates: what is queued behind it is dead-lettered.
#[process]
struct OneShot;

#[process]
impl OneShot {
    #[handle]
    fn ping(&mut self, _: Ping, ctx: &mut Ctx<Self>) {
        ctx.complete();
    }
}

/// Holds its group's only worker until the test lets it go.
#[process]
struct Blocker {
    entered: SharedClient<Arc<Barrier>>,
    gate: SharedClient<Arc<Barrier>>,
}

#[process]
impl Blocker {
    #[handle]
    fn block(&mut self, _: Block) {
        self.entered.wait();
        self.gate.wait();
    }
}

#[test]
fn a_dead_letter_downcasts_to_the_posted_message() {
    let (tx, rx) = mpsc::channel();
    let rt = Runtime::builder()
        .dead_letters(move |letter: DeadLetter| {
            let _ = tx.send(letter);
        })
        .build()
        .expect("the runtime starts");
    let group = rt.group("one").threads(1).build().expect("a new group");
    let entered = Arc::new(Barrier::new(2));
    let gate = Arc::new(Barrier::new(2));
    let blocker = rt.spawner().group(&group).spawn(Blocker {
        entered: SharedClient::new(Arc::clone(&entered), "the test's barrier"),
        gate: SharedClient::new(Arc::clone(&gate), "the test's barrier"),
    });
    blocker.post(Block).expect("the blocker is alive");
    // The group's only worker is now inside `block`: nothing else in the group runs.
    entered.wait();
    let one_shot = rt.spawner().group(&group).spawn(OneShot);
    one_shot.post(Ping(1)).expect("alive");
    one_shot.post(Ping(2)).expect("alive: nothing has run yet");
    gate.wait();

    let letter = rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("the second ping is dead-lettered");
    assert_eq!(letter.to(), one_shot.id());
    assert!(letter.is::<Ping>());
    assert!(!letter.is::<Block>());
    assert_eq!(letter.downcast_ref::<Ping>(), Some(&Ping(2)));
    assert!(letter.type_name().ends_with("Ping"));
    let letter = match letter.downcast::<Block>() {
        Ok(_) => panic!("not a `Block`"),
        Err(letter) => letter,
    };
    assert_eq!(letter.downcast::<Ping>().ok(), Some(Ping(2)));
    rt.shutdown_graceful();
}
