//! Monitors and links across nodes, the cluster registry, and spawning from factories: nodes
//! in one process, on loopback.
//!
//! No assertion is timed: each waits with a generous deadline and fails only if the awaited
//! thing never happens.

mod common;

use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use whirl::prelude::*;
use whirl_dist::{
    Node, NodeId, Peers, Pid, Policy, Remote, RemoteDown, RemoteExit, Request, SpawnRemoteError,
    Spawned,
};

use common::{wait_for, DEADLINE};

/// `n` nodes in a full mesh, each having seen all the others Up.
/// `n` nodes over TLS; node-0 may call the `greeter` factory anywhere and its principals are
/// believed in full (the default policy allows neither).
fn cluster(n: usize) -> Vec<Node> {
    let trusted = || Peers::named(["node-0"]);
    common::cluster(n, |c| {
        c.policy(
            Policy::new()
                .allow_factory("greeter", trusted())
                .trust_principals(trusted(), u8::MAX, f64::MAX),
        )
    })
    .0
}

#[derive(Message, Serialize, Deserialize)]
struct Crash;
impl Remote for Crash {
    const TAG: &'static str = "wrs.Crash/1";
}

#[derive(Message, Serialize, Deserialize)]
struct Hello(String);
impl Remote for Hello {
    const TAG: &'static str = "wrs.Hello/1";
}
impl Request for Hello {
    type Reply = String;
}

/// Which principal a process serves: asked across nodes.
#[derive(Message, Serialize, Deserialize)]
struct WhoFor;
impl Remote for WhoFor {
    const TAG: &'static str = "wrs.WhoFor/1";
}
impl Request for WhoFor {
    type Reply = Option<(u64, u8)>;
}

#[process]
struct Greeter {
    name: String,
}

#[process]
impl Greeter {
    #[handle]
    fn crash(&mut self, _: Crash) -> Result<(), Failure> {
        Err(Failure::new("asked to crash"))
    }

    #[handle]
    fn hello(&mut self, Hello(who): Hello) -> String {
        format!("{} greets {who}", self.name)
    }

    #[handle]
    fn who_for(&mut self, _: WhoFor, ctx: &mut Ctx<Self>) -> Option<(u64, u8)> {
        ctx.principal().map(|p| (p.id(), p.priority()))
    }
}

fn greeter(node: &Node, runtime: &Runtime, name: &str) -> (Addr<Greeter>, Pid) {
    let addr = runtime.spawn(Greeter { name: name.into() });
    let pid = node
        .export(&addr)
        .accept::<Crash>()
        .answer::<Hello>()
        .answer::<WhoFor>()
        .build()
        .expect("export");
    (addr, pid)
}

/// Keeps the `RemoteDown` notices it receives until the test takes them.
#[process]
struct Watcher {
    seen: Vec<RemoteDown>,
}

#[derive(Message)]
struct Take;

#[process]
impl Watcher {
    #[handle]
    fn down(&mut self, notice: RemoteDown) {
        self.seen.push(notice);
    }

    #[handle]
    fn take(&mut self, _: Take) -> Vec<RemoteDown> {
        std::mem::take(&mut self.seen)
    }
}

/// The notices a watcher received, one at a time.
struct Notices {
    watcher: Addr<Watcher>,
    taken: std::collections::VecDeque<RemoteDown>,
}

impl Notices {
    fn recv_timeout(&mut self, timeout: Duration) -> Result<RemoteDown, &'static str> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(n) = self.taken.pop_front() {
                return Ok(n);
            }
            self.taken.extend(self.watcher.call(Take).expect("take"));
            if self.taken.is_empty() {
                if Instant::now() >= deadline {
                    return Err("no notice");
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
}

fn watcher(runtime: &Runtime) -> (Addr<Watcher>, Notices) {
    let w = runtime.spawn(Watcher { seen: Vec::new() });
    let notices = Notices {
        watcher: w.clone(),
        taken: Default::default(),
    };
    (w, notices)
}

/// Returns once node `to` has handled every control frame `from` sent it before this call
/// (monitors, links, demonitors): a monitor of a process that does not exist follows them on
/// the same lane, in order, and its `NoProcess` notice comes back only once `to` has handled
/// it. A watcher of its own on `runtime` takes the notice.
fn flush_control_lane(from: &Node, to: NodeId, runtime: &Runtime) {
    let (probe_watcher, mut notices) = watcher(runtime);
    let probe = Pid::new(to, u64::MAX);
    from.monitor(probe, probe_watcher.recipient());
    let notice = notices.recv_timeout(DEADLINE).expect("the probe's notice");
    assert_eq!((notice.pid, notice.reason), (probe, RemoteExit::NoProcess));
    probe_watcher.exit(ExitReason::Normal);
}

/// The current wall-clock time, in milliseconds since the Unix epoch (what a registration
/// records).
fn unix_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("the clock is after 1970")
        .as_millis()
}

#[test]
fn monitors_see_ends_missing_processes_and_lost_nodes() {
    let nodes = cluster(3);
    let (a, b, c) = (&nodes[0], &nodes[1], &nodes[2]);
    let rt_a = Runtime::new();
    let rt_b = Runtime::new();
    let rt_c = Runtime::new();
    let (w, mut notices) = watcher(&rt_a);

    // A process that fails: Down with its failure.
    let (_g, pid) = greeter(b, &rt_b, "g");
    a.monitor(pid, w.recipient());
    // The monitor frame and the crash travel on different lanes: wait until it is in place.
    flush_control_lane(a, b.id(), &rt_a);
    a.remote::<Crash>(pid).post(Crash).expect("post");
    let notice = notices.recv_timeout(DEADLINE).expect("down");
    assert_eq!(notice.pid, pid);
    assert_eq!(notice.reason, RemoteExit::Failed("asked to crash".into()));

    // A process that does not exist: NoProcess at once.
    a.monitor(Pid::new(b.id(), 999_999), w.recipient());
    let notice = notices.recv_timeout(DEADLINE).expect("noproc");
    assert_eq!(notice.reason, RemoteExit::NoProcess);

    // A demonitored process ends: nothing. A second monitor of it, placed after the first and
    // left in place, is the witness: b tells a process's watchers in the order they were
    // placed, on one lane, and a handles that lane in order, so once the second monitor's
    // notice is here the first's callback would have run.
    let (g2, pid2) = greeter(b, &rt_b, "g2");
    let fired = Arc::new(AtomicBool::new(false));
    let told = Arc::clone(&fired);
    let m = a.monitor_with(pid2, move |_| told.store(true, SeqCst));
    a.monitor(pid2, w.recipient());
    assert!(a.demonitor(m));
    flush_control_lane(a, b.id(), &rt_a);
    g2.exit(ExitReason::Normal);
    let notice = notices
        .recv_timeout(DEADLINE)
        .expect("the second monitor's Down");
    assert_eq!((notice.pid, notice.reason), (pid2, RemoteExit::Normal));
    assert!(
        !fired.load(SeqCst),
        "the demonitored watch was told of the end"
    );

    // A node lost: NoConnection, for every process watched there.
    let (_g3, pid3) = greeter(c, &rt_c, "g3");
    let (_g4, pid4) = greeter(c, &rt_c, "g4");
    a.monitor(pid3, w.recipient());
    a.monitor(pid4, w.recipient());
    // No wait for c to have the monitors: a watch is kept on the watching node, which tells
    // it NoConnection when c goes, whether or not c ever saw it.
    let c_id = c.id();
    drop(nodes_into_shutdown(nodes, 2));
    let mut lost = [
        notices.recv_timeout(DEADLINE).expect("lost 1"),
        notices.recv_timeout(DEADLINE).expect("lost 2"),
    ];
    lost.sort_by_key(|n| n.pid);
    let mut want = [pid3, pid4];
    want.sort();
    assert!(lost
        .iter()
        .all(|n| n.reason == RemoteExit::NoConnection && n.pid.node() == c_id));
    assert_eq!([lost[0].pid, lost[1].pid], want);
    rt_a.shutdown_graceful();
    rt_b.shutdown_graceful();
    rt_c.shutdown_graceful();
}

/// Shuts down node `i` of `nodes`; returns the rest.
fn nodes_into_shutdown(mut nodes: Vec<Node>, i: usize) -> Vec<Node> {
    nodes.remove(i).shutdown().expect("shutdown");
    nodes
}

#[test]
fn links_fail_together_across_nodes() {
    let nodes = cluster(2);
    let (a, b) = (&nodes[0], &nodes[1]);
    let rt_a = Runtime::new();
    let rt_b = Runtime::new();

    // The remote one fails: the local one fails with it.
    let (local, _) = greeter(a, &rt_a, "local");
    let (_remote, remote_pid) = greeter(b, &rt_b, "remote");
    a.link(&local, remote_pid);
    // The link and the crash travel on different lanes: wait until the link is in place.
    flush_control_lane(a, b.id(), &rt_a);
    a.remote::<Crash>(remote_pid).post(Crash).expect("post");
    wait_for("local fails with its link", || local.is_terminated());

    // The local one fails: the remote one fails with it.
    let (local, _) = greeter(a, &rt_a, "local2");
    let (remote, remote_pid) = greeter(b, &rt_b, "remote2");
    a.link(&local, remote_pid);
    // No wait: the failure goes to b on the lane that carried the link, after it.
    local.post(Crash).expect("post");
    wait_for("remote fails with its link", || remote.is_terminated());

    // A normal end does not propagate. A monitor placed after the link is the witness: b
    // tells the link and then the monitor, on one lane, and a handles that lane in order. Had
    // the link failed `local`, it would have been asked to exit before the witness's notice
    // came, so before the call below, which it would then not answer.
    let (w, mut notices) = watcher(&rt_a);
    let (local, _) = greeter(a, &rt_a, "local3");
    let (remote, remote_pid) = greeter(b, &rt_b, "remote3");
    a.link(&local, remote_pid);
    a.monitor(remote_pid, w.recipient());
    // Placed before the end: a link that finds no process fails `local` (NoProcess).
    flush_control_lane(a, b.id(), &rt_a);
    remote.exit(ExitReason::Normal);
    let notice = notices
        .recv_timeout(DEADLINE)
        .expect("the witness's notice");
    assert_eq!(
        (notice.pid, notice.reason),
        (remote_pid, RemoteExit::Normal)
    );
    assert_eq!(
        local
            .call(Hello("you".into()))
            .expect("local still answers"),
        "local3 greets you"
    );
    assert!(!local.is_terminated());

    // The node of the linked process is lost: the local one fails.
    let (_remote, remote_pid) = greeter(b, &rt_b, "remote4");
    a.link(&local, remote_pid);
    // No wait for b to have the link: a keeps its side, and fails `local` when b goes,
    // whether or not b ever saw it.
    let mut nodes = nodes;
    nodes.remove(1).shutdown().expect("b shuts down");
    wait_for("local fails with the lost node", || local.is_terminated());
    rt_a.shutdown_graceful();
    rt_b.shutdown_graceful();
}

#[test]
fn the_registry_is_cluster_wide_and_forgets_the_dead() {
    let nodes = cluster(3);
    let (a, b, c) = (&nodes[0], &nodes[1], &nodes[2]);
    let rt_b = Runtime::new();
    let rt_c = Runtime::new();
    let (g, pid) = greeter(b, &rt_b, "bob");
    b.register("greeter", pid).expect("register");
    assert!(matches!(
        b.register("no/slash", pid),
        Err(whirl_dist::DistError::InvalidName { .. })
    ));
    assert!(matches!(
        a.register("greeter", pid),
        Err(whirl_dist::DistError::NotExported(_))
    ));
    wait_for("a sees the name", || a.whereis_all("greeter") == vec![pid]);
    let hello = a.whereis::<Hello>("greeter").expect("found");
    assert_eq!(
        hello
            .request(Hello("ann".into()))
            .timeout(DEADLINE)
            .call()
            .expect("answer"),
        "bob greets ann"
    );

    // A second holder on another node; the earliest answers `whereis`. The first registration
    // took its time before `register` returned: once the clock has moved past that
    // millisecond, the second is later, whatever the node ids.
    let first_registered_by = unix_ms();
    wait_for(
        "the clock passes the first registration's millisecond",
        || unix_ms() > first_registered_by,
    );
    let (_g2, pid2) = greeter(c, &rt_c, "cid");
    c.register("greeter", pid2).expect("register");
    wait_for("a sees both", || a.whereis_all("greeter").len() == 2);
    assert_eq!(a.whereis::<Hello>("greeter").map(|r| r.pid()), Some(pid));

    // The process ends: its name goes.
    g.exit(ExitReason::Normal);
    wait_for("the ended process's name goes", || {
        a.whereis_all("greeter") == vec![pid2]
    });
    // Its node goes: its names go.
    let mut nodes = nodes;
    let c = nodes.remove(2);
    let c_id = c.id();
    c.shutdown().expect("c shuts down");
    wait_for("the lost node's names go", || {
        nodes[0].whereis_all("greeter").is_empty()
            && nodes[0].state(c_id) == Some(whirl_dist::MemberState::Quarantined)
    });
    assert!(nodes[0].registered().is_empty());
    rt_b.shutdown_graceful();
    rt_c.shutdown_graceful();
}

#[test]
fn factories_spawn_on_named_nodes_for_a_principal() {
    let nodes = cluster(2);
    let (a, b) = (&nodes[0], &nodes[1]);
    let rt_b = Runtime::new();
    let group = rt_b.default_group().clone();
    b.add_factory("greeter", move |name: String, ctx| {
        if name.is_empty() {
            return Spawned::Refused("a greeter needs a name".into());
        }
        let state = Greeter { name };
        let addr = match ctx.take_principal() {
            Some(p) => group.spawner().principal(p).spawn(state),
            None => group.spawn(state),
        };
        ctx.export(&addr)
            .accept::<Crash>()
            .answer::<Hello>()
            .answer::<WhoFor>()
            .build()
            .into()
    })
    .expect("factory");

    let vip = Principal::builder(77)
        .priority(3)
        .build()
        .expect("a valid principal");
    let pid = a
        .spawn_on(b.id(), "greeter", "dora", Some(&vip), DEADLINE)
        .expect("spawned");
    assert_eq!(pid.node(), b.id());
    assert_eq!(
        a.remote::<Hello>(pid)
            .request(Hello("eve".into()))
            .timeout(DEADLINE)
            .call()
            .expect("hello"),
        "dora greets eve"
    );
    assert_eq!(
        a.remote::<WhoFor>(pid)
            .request(WhoFor)
            .timeout(DEADLINE)
            .call()
            .expect("who for"),
        Some((77, 3))
    );
    assert!(matches!(
        a.spawn_on(b.id(), "greeter", "", None, DEADLINE),
        Err(SpawnRemoteError::Failed(why)) if why.contains("needs a name")
    ));
    assert!(matches!(
        a.spawn_on(b.id(), "nope", "x", None, DEADLINE),
        Err(SpawnRemoteError::NoFactory(f)) if f == "nope"
    ));
    assert!(matches!(
        a.spawn_on(b.id(), "greeter", &12u8, None, DEADLINE),
        Err(SpawnRemoteError::BadArguments)
    ));
    rt_b.shutdown_graceful();
}

/// Admits only principals of priority 5 or more: what the test needs to see the principal
/// arrive with remote messages.
struct VipsOnly;

impl whirl::admission::MessagePredicate for VipsOnly {
    fn admit(&self, offer: &whirl::admission::Offer<'_>) -> bool {
        offer.priority() >= 5
    }
}

#[test]
fn the_principal_travels_with_posts_and_asks() {
    let nodes = cluster(2);
    let (a, b) = (&nodes[0], &nodes[1]);
    let rt_b = Runtime::new();
    let vip_group = rt_b
        .group("vip")
        .threads(1)
        .predicate(VipsOnly)
        .build()
        .expect("group");
    let addr = vip_group.spawn(Greeter {
        name: "door".into(),
    });
    let pid = b.export(&addr).answer::<Hello>().build().expect("export");
    let anonymous = a.remote::<Hello>(pid);
    assert!(matches!(
        anonymous
            .request(Hello("x".into()))
            .timeout(DEADLINE)
            .call(),
        Err(whirl_dist::RemoteCallError::Bounced {
            reason: whirl_dist::BounceReason::Rejected,
            ..
        })
    ));
    let vip = Principal::builder(1)
        .priority(7)
        .build()
        .expect("a valid principal");
    assert_eq!(
        anonymous
            .request(Hello("vip".into()))
            .on_behalf(&vip)
            .timeout(DEADLINE)
            .call()
            .expect("admitted"),
        "door greets vip"
    );
    // Posts too: one refused, one admitted, counted by the receiving group.
    let (tx, rx) = std::sync::mpsc::channel();
    let posts = a.remote::<Hello>(pid).on_bounce(move |u| {
        let _ = tx.send(u.reason);
    });
    posts.post(Hello("anon".into())).expect("sent");
    assert_eq!(
        rx.recv_timeout(DEADLINE),
        Ok(whirl_dist::BounceReason::Rejected)
    );
    posts
        .request(Hello("vip".into()))
        .on_behalf(&vip)
        .post()
        .expect("sent");
    wait_for("handled", || vip_group.counts().handled == 2);
    assert_eq!(vip_group.counts().rejected, 2);
    rt_b.shutdown_graceful();
}
