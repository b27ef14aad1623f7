//! Where a process runs: the group it declares (`Process::GROUP`), the group it is spawned
//! into, and the confinement of processes that share state (`Process::SHARES_STATE`) to groups
//! that declare it. A process that cannot run where it was asked fails at once, with a reason
//! that says why, before any of its own code runs.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use whirl_runtime::request::Sender as _;

use common::{assert_isolated, counter_usize};
use whirl_runtime::{
    Addr, Ctx, ExitReason, Failure, Handles, Isolated, Message, Process, ReplyTo, Runtime,
    SharedClient, SpawnRefusal,
};

/// Reports the group it runs in; counts its start hooks.
struct Probe<const KIND: u8> {
    starts: SharedClient<Arc<AtomicUsize>>,
    terminations: SharedClient<Arc<AtomicUsize>>,
}

struct WhereAmI(ReplyTo<String>);
// SAFETY: a reply handle for a `String`.
unsafe impl Isolated for WhereAmI {}
impl Message for WhereAmI {}

const _: () = {
    // Never called: naming the instances makes the compiler check each field's type.
    let _ = assert_isolated::<SharedClient<Arc<AtomicUsize>>>;
    let _ = assert_isolated::<ReplyTo<String>>;
};

// SAFETY: every field is `Isolated` (asserted above): two counters the test thread reads, held
// as `SharedClient`s (test instruments, see `common::counter_usize`). The message is a reply
// handle. (`SHARES_STATE` is declared for the `SHARING` kind to test confinement: the probe
// shares nothing itself.)
unsafe impl<const KIND: u8> Process for Probe<KIND> {
    type Message = WhereAmI;

    fn handle(&mut self, WhereAmI(reply): WhereAmI, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        let _ = reply.send(ctx.group().name().to_owned());
        Ok(())
    }

    fn started(&mut self, _ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        self.starts.fetch_add(1, SeqCst);
        Ok(())
    }

    fn terminated(&mut self, _reason: &ExitReason) {
        self.terminations.fetch_add(1, SeqCst);
    }

    const GROUP: Option<&'static str> = match KIND {
        PLAIN => None,
        _ => Some("db"),
    };

    const SHARES_STATE: Option<&'static str> = match KIND {
        SHARING => Some("shards share one store"),
        _ => None,
    };
}

impl<const KIND: u8> Handles<WhereAmI> for Probe<KIND> {
    fn into_message(msg: WhereAmI) -> WhereAmI {
        msg
    }
}

const PLAIN: u8 = 0;
const DECLARES_DB: u8 = 1;
const SHARING: u8 = 2;

fn probe<const KIND: u8>() -> (Probe<KIND>, Arc<AtomicUsize>, Arc<AtomicUsize>) {
    let (starts, terminations) = (Arc::default(), Arc::default());
    let p = Probe {
        starts: counter_usize(&starts),
        terminations: counter_usize(&terminations),
    };
    (p, starts, terminations)
}

fn failure_text(addr_reason: Option<ExitReason>) -> String {
    match addr_reason {
        Some(ExitReason::Failed(f)) => f.reason().to_owned(),
        other => panic!("expected a failure, got {other:?}"),
    }
}

/// Spawns a process that is expected to be refused, and returns why it terminated, as a
/// system monitor hears it.
fn exit_of<const KIND: u8>(
    rt: &Runtime,
    spawn: impl FnOnce(&Runtime) -> Addr<Probe<KIND>>,
) -> Option<ExitReason> {
    let addr = spawn(rt);
    assert!(
        addr.is_terminated(),
        "the process should have been refused at spawn"
    );
    let (tx, mut events) = common::events();
    let watcher = rt.spawn(common::System::new("watcher", &tx));
    // Monitoring a process that has already terminated delivers its notice at once.
    common::run(&watcher, move |_, ctx| ctx.monitor(&addr));
    Some(events.down("watcher").reason)
}

#[test]
fn a_declared_group_is_where_spawn_puts_the_process() {
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let db = rt.group("db").threads(1).build().expect("build group");
    assert_eq!(
        rt.group_named("db").map(|g| g.name().to_owned()),
        Some("db".into())
    );
    assert!(rt.group_named("nowhere").is_none());

    let (p, _, _) = probe::<DECLARES_DB>();
    let placed = rt.spawn(p);
    assert_eq!(placed.request_with(WhereAmI).call().unwrap(), "db");

    // Naming a group wins over the declaration.
    let (p, _, _) = probe::<DECLARES_DB>();
    let explicit = rt.spawner().group(rt.default_group()).spawn(p);
    assert_eq!(explicit.request_with(WhereAmI).call().unwrap(), "default");

    // A child spawned without naming a group goes to its declared group too, not its parent's.
    let (tx, _events) = common::events();
    let parent = rt.spawn(common::Plain::new("parent", &tx));
    let (child, _, _) = probe::<DECLARES_DB>();
    let child = common::run(&parent, move |_, ctx| ctx.spawn(child));
    assert_eq!(child.request_with(WhereAmI).call().unwrap(), "db");
    rt.block_until_idle();
    assert_eq!(db.counts().handled, 2);
    rt.shutdown_graceful();
}

#[test]
fn a_missing_declared_group_fails_the_process_at_once_and_says_so() {
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let (p, starts, terminations) = probe::<DECLARES_DB>();
    let reason = exit_of(&rt, |rt| rt.spawn(p));
    let text = failure_text(reason);
    assert!(text.contains("declares group `db`"), "{text}");
    assert!(text.contains("rt.group(\"db\")"), "{text}");
    assert_eq!(starts.load(SeqCst), 0, "none of its own code ran");
    assert_eq!(terminations.load(SeqCst), 1, "its terminated hook ran once");
    rt.block_until_idle();
    common::assert_balanced(&rt.counts());
    rt.shutdown_graceful();
}

#[test]
fn shared_state_is_confined_to_the_declaring_group() {
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let plain = rt.group("plain").threads(1).build().expect("build group");
    let other = rt
        .group("other")
        .threads(1)
        .shares_state("test")
        .build()
        .expect("build group");
    let db = rt
        .group("db")
        .threads(1)
        .shares_state("test")
        .build()
        .expect("build group");
    assert_eq!(plain.shared_state_reason(), None);
    assert_eq!(db.shared_state_reason(), Some("test"));

    // In its declared group, which declares shared state: it runs.
    let (p, starts, _) = probe::<SHARING>();
    let placed = rt.spawn(p);
    assert_eq!(placed.request_with(WhereAmI).call().unwrap(), "db");
    assert_eq!(starts.load(SeqCst), 1);

    // In a group that does not declare shared state: refused.
    let (p, starts, _) = probe::<SHARING>();
    let text = failure_text(exit_of(&rt, |rt| rt.spawner().group(&plain).spawn(p)));
    assert!(text.contains("does not declare shared state"), "{text}");
    assert!(text.contains("shards share one store"), "{text}");
    assert_eq!(starts.load(SeqCst), 0);

    // In a sharing group other than the one it is confined to: refused.
    let (p, _, _) = probe::<SHARING>();
    let text = failure_text(exit_of(&rt, |rt| rt.spawner().group(&other).spawn(p)));
    assert!(text.contains("confined to group `db`"), "{text}");

    rt.block_until_idle();
    common::assert_balanced(&rt.counts());
    rt.shutdown_graceful();
}

#[test]
fn try_spawn_refuses_with_a_typed_error_and_hands_the_state_back() {
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let plain = rt.group("plain").threads(1).build().expect("build group");
    let before = rt.counts();

    // A declared group that does not exist.
    let (p, starts, terminations) = probe::<DECLARES_DB>();
    let error = rt.spawner().try_spawn(p).expect_err("no group `db`");
    assert!(matches!(
        error.refusal(),
        SpawnRefusal::NoSuchGroup { group: "db", .. }
    ));
    assert!(error.to_string().contains("rt.group(\"db\")"), "{error}");

    // Shared state outside a group that declares it.
    let (p, _, _) = probe::<SHARING>();
    let error = rt
        .spawner()
        .group(&plain)
        .try_spawn(p)
        .expect_err("plain group");
    assert!(matches!(
        error.refusal(),
        SpawnRefusal::SharesStateOutsideItsGroup { .. }
    ));

    // The state comes back untouched and can be spawned where it belongs.
    let db = rt
        .group("db")
        .threads(1)
        .shares_state("test")
        .build()
        .expect("build group");
    let placed = rt
        .spawner()
        .group(&db)
        .try_spawn(error.into_state())
        .expect("its own group");
    assert_eq!(placed.request_with(WhereAmI).call().unwrap(), "db");

    // Refused processes were never created: no hook, no count.
    assert_eq!(starts.load(SeqCst), 0);
    assert_eq!(terminations.load(SeqCst), 0);
    rt.block_until_idle();
    assert_eq!(rt.counts().spawned, before.spawned + 1);
    rt.shutdown_graceful();
}
