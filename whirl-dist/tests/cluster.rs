//! Several nodes in one process, on loopback: Up, Down, quarantine, malformed keys.
//!
//! No assertion is timed: each waits for an event with a generous deadline and fails only if
//! the event never comes.

mod common;

use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use whirl_dist::{MemberState, Node, NodeEvent, NodeId};
use zenoh::Wait;

use common::{cluster_name, expect_event, free_port, raw_session, tcp_endpoint};

const DEADLINE: Duration = Duration::from_secs(20);
const LEASE: Duration = Duration::from_millis(1000);

/// A node listening on `port` and connecting to `connect`.
fn node(cluster: &str, port: u16, connect: &[u16]) -> Node {
    Node::start(
        common::plaintext(cluster)
            .listen([tcp_endpoint(port)])
            .connect(connect.iter().map(|&p| tcp_endpoint(p)))
            .lease(LEASE),
    )
    .expect("node starts")
}

/// Waits until every node of `nodes` has been reported Up, in any order.
fn expect_all_up(events: &Receiver<NodeEvent>, nodes: &[NodeId]) {
    let deadline = Instant::now() + DEADLINE;
    let mut missing: Vec<NodeId> = nodes.to_vec();
    while !missing.is_empty() {
        let left = deadline
            .checked_duration_since(Instant::now())
            .unwrap_or_else(|| panic!("never saw {missing:?} Up within {DEADLINE:?}"));
        match events.recv_timeout(left) {
            Ok(NodeEvent::Up(node)) => missing.retain(|&m| m != node),
            Ok(_) => {}
            Err(e) => panic!("never saw {missing:?} Up within {DEADLINE:?}: {e}"),
        }
    }
}

fn down(id: NodeId) -> impl Fn(&NodeEvent) -> bool {
    move |e| matches!(e, NodeEvent::Down { node, .. } if *node == id)
}

#[test]
fn three_nodes_see_each_other_up_and_a_shutdown_is_down_everywhere() {
    let cluster = cluster_name("test");
    let (pa, pb, pc) = (free_port(), free_port(), free_port());
    // A full mesh: scouting is off, and peers do not route for one another.
    let a = node(&cluster, pa, &[]);
    let b = node(&cluster, pb, &[pa]);
    let c = node(&cluster, pc, &[pa, pb]);
    let (ea, eb, ec) = (a.events(), b.events(), c.events());
    for (events, others) in [
        (&ea, [b.id(), c.id()]),
        (&eb, [a.id(), c.id()]),
        (&ec, [a.id(), b.id()]),
    ] {
        expect_all_up(events, &others);
    }
    let mut ab = vec![a.id(), b.id()];
    ab.sort();
    assert_eq!(c.members(), ab);

    let c_id = c.id();
    c.shutdown().expect("clean shutdown");
    expect_event(&ea, "Down of c at a", down(c_id));
    expect_event(&eb, "Down of c at b", down(c_id));
    assert_eq!(a.state(c_id), Some(MemberState::Quarantined));
    assert_eq!(b.members(), [a.id()]);
    assert_eq!(a.quarantined(), [c_id]);
    assert_eq!(a.stats().downs, 1);

    a.shutdown().expect("clean shutdown");
    b.shutdown().expect("clean shutdown");
}

#[test]
fn events_replays_the_nodes_already_up() {
    let cluster = cluster_name("test");
    let pa = free_port();
    let a = node(&cluster, pa, &[]);
    let b = Node::start(
        common::plaintext(&cluster)
            .listen(Vec::<String>::new())
            .connect([tcp_endpoint(pa)])
            .lease(LEASE),
    )
    .expect("node starts");
    let first = a.events();
    expect_event(&first, "Up", |e| *e == NodeEvent::Up(b.id()));
    // A receiver made later still hears of b.
    let later = a.events();
    expect_event(&later, "replayed Up", |e| *e == NodeEvent::Up(b.id()));
    b.shutdown().expect("clean shutdown");
    a.shutdown().expect("clean shutdown");
}

#[test]
fn a_quarantined_id_that_reappears_is_refused_and_stays_quarantined() {
    let cluster = cluster_name("test");
    let pa = free_port();
    let a = node(&cluster, pa, &[]);
    let events = a.events();
    // Play a node whose token is withdrawn, then declared again under the same id: what a
    // healed partition looks like from the other side.
    let ghost = NodeId::random().expect("entropy");
    let key = format!("whirl/{cluster}/alive/{ghost}");
    let session = raw_session(pa);
    let token = session
        .liveliness()
        .declare_token(&key)
        .wait()
        .expect("token");
    expect_event(&events, "Up of the ghost", |e| *e == NodeEvent::Up(ghost));
    token.undeclare().wait().expect("undeclare");
    expect_event(&events, "Down of the ghost", down(ghost));
    let again = session
        .liveliness()
        .declare_token(&key)
        .wait()
        .expect("token");
    expect_event(&events, "refused resurrection", |e| {
        *e == NodeEvent::ResurrectionRefused(ghost)
    });
    assert_eq!(a.state(ghost), Some(MemberState::Quarantined));
    assert!(a.members().is_empty());
    assert_eq!(a.stats().resurrections_refused, 1);
    assert_eq!(a.stats().ups, 1);
    drop(again);
    session.close().wait().expect("close");
    a.shutdown().expect("clean shutdown");
}

#[test]
fn a_malformed_key_is_counted_and_ignored() {
    let cluster = cluster_name("test");
    let pa = free_port();
    let a = node(&cluster, pa, &[]);
    let events = a.events();
    let session = raw_session(pa);
    let bad = session
        .liveliness()
        .declare_token(format!("whirl/{cluster}/alive/not-a-node-id"))
        .wait()
        .expect("token");
    // A well-formed token declared after the bad one: once it is Up, the bad one has been seen.
    let good = NodeId::random().expect("entropy");
    let _token = session
        .liveliness()
        .declare_token(format!("whirl/{cluster}/alive/{good}"))
        .wait()
        .expect("token");
    expect_event(&events, "Up of the good id", |e| *e == NodeEvent::Up(good));
    let deadline = Instant::now() + DEADLINE;
    while a.stats().malformed_keys == 0 {
        assert!(
            Instant::now() < deadline,
            "the malformed key was never seen"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(a.members(), [good]);
    drop(bad);
    session.close().wait().expect("close");
    a.shutdown().expect("clean shutdown");
}

#[test]
fn a_bad_endpoint_is_an_error() {
    let err = Node::start(common::plaintext("c").connect(["nonsense"])).expect_err("must fail");
    assert!(
        matches!(err, whirl_dist::DistError::Config { .. }),
        "{err:?}"
    );
}
