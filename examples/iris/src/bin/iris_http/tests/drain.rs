//! The drain (`server/drain.rs`), run in-process as SIGTERM runs it: requests in flight are
//! answered with `Connection: close`, a keep-alive connection's next answer closes it, quiet
//! connections are closed, and at the deadline what is still queued (in a handler, behind
//! one, or half received) is answered 503 with `Retry-After` and `Connection: close`. No
//! connection is closed while it waits for an answer it does not get.
//!
//! A slow request is a resource lookup with simulated work (`Options::work`) spun by the
//! resources group's one handler at a time (`concurrency = 1`), admission control off (so
//! that slowness is not shed); `Options::drain_grace` is long unless a test is about it, so
//! that a keep-alive connection the test means to use is not closed for being quiet first.

use std::net::TcpStream;

use super::*;
use crate::ops::Phase;
use crate::server::drain::DrainReport;

/// A server whose resource lookups take `work`, with a long quiet-connection grace.
fn slow_server(work: Duration, grace: Duration) -> TestServer {
    let mut options = demo_options();
    options.work = work;
    options.drain_grace = grace;
    let tuning = Tuning {
        predicates: false,
        ..Tuning::default()
    };
    TestServer::start_tuned(options, tuning)
}

/// Requests received and not yet answered.
fn in_flight(server: &TestServer) -> i64 {
    server.server.ops().metrics.in_flight.get()
}

/// Asserts that `response` is the deadline's refusal.
fn assert_refused_at_deadline(response: &Response, who: &str) {
    assert_eq!(response.status, 503, "{who}: {}", response.text());
    assert_eq!(response.header("retry-after"), Some("2"), "{who}");
    assert!(response.closes(), "{who}: no Connection: close");
}

#[test]
fn a_drain_answers_what_is_in_flight_and_closes_each_connection_after_its_next_answer() {
    let server = slow_server(Duration::from_millis(600), Duration::from_secs(60));
    let mut idle = server.connect();
    let first = idle.get("/healthz", None);
    assert_eq!(first.status, 200);
    assert!(!first.closes(), "a keep-alive answer before the drain");
    let mut slow = server.connect();
    slow.send(get("/resources/1", None).as_bytes());
    wait_until("the slow request is in flight", || in_flight(&server) >= 1);
    let report = std::thread::scope(|scope| {
        let drain = scope.spawn(|| server.server.drain(Duration::from_secs(30)));
        wait_until("the drain has begun", || {
            server.server.ops().phase() == Phase::Draining
        });
        // The keep-alive connection's next answer: not ready, and closing.
        let ready = idle.get("/readyz", None);
        assert_eq!(ready.status, 503, "{}", ready.text());
        assert_eq!(ready.text(), "draining\n");
        assert!(ready.closes(), "the next answer carries Connection: close");
        idle.assert_closed_by_server();
        // The request in flight is answered, and closes its connection.
        let answered = slow.read_response();
        assert_eq!(answered.status, 200, "{}", answered.text());
        assert!(answered.text().contains("\"id\":1"), "{}", answered.text());
        assert!(
            answered.closes(),
            "the answer in flight carries Connection: close"
        );
        slow.assert_closed_by_server();
        drain.join().expect("the drain")
    });
    assert_eq!(
        (report.at_deadline, report.left),
        (0, 0),
        "every connection closed before the deadline: {report:?}"
    );
    assert_eq!(server.server.ops().metrics.draining.get(), 1);
    wait_until("the listener is closed", || {
        TcpStream::connect(server.addr()).is_err()
    });
    server.stop();
}

#[test]
fn at_the_deadline_what_is_still_queued_is_answered_503_and_every_connection_closes() {
    let server = slow_server(Duration::from_secs(4), Duration::from_secs(60));
    // Half a request: answered at the deadline too (it will never be served).
    let mut partial = server.connect();
    partial.send(b"GET /resources/3 HTTP/1.1\r\nHost: localhost\r\n");
    // One request in the resources group's handler, another queued behind it.
    let mut slow = server.connect();
    slow.send(get("/resources/1", None).as_bytes());
    let mut queued = server.connect();
    queued.send(get("/resources/2", None).as_bytes());
    // A keep-alive connection with nothing asked.
    let mut idle = server.connect();
    assert_eq!(idle.get("/healthz", None).status, 200);
    wait_until("both lookups are in flight", || in_flight(&server) >= 2);
    let report: DrainReport = server.server.drain(Duration::from_millis(300));
    for (client, who) in [
        (&mut slow, "in the handler"),
        (&mut queued, "queued"),
        (&mut partial, "half received"),
    ] {
        let response = client.read_response();
        assert_refused_at_deadline(&response, who);
        client.assert_closed_by_server();
    }
    // Nothing asked, nothing owed: closed without a word.
    idle.assert_closed_by_server();
    assert_eq!(
        (report.at_deadline, report.left),
        (4, 0),
        "four connections open at the deadline, all closed after it: {report:?}"
    );
    assert_eq!(server.server.ops().phase(), Phase::Deadline);
    server.stop();
}

/// With no grace, as nginx does, a keep-alive connection with nothing to answer is closed
/// as soon as the drain begins, and the drain does not wait for its deadline.
#[test]
fn without_a_grace_a_quiet_connection_is_closed_when_the_drain_begins() {
    let server = slow_server(Duration::ZERO, Duration::ZERO);
    let mut idle = server.connect();
    assert_eq!(idle.get("/files/index.html", None).status, 200);
    let report = std::thread::scope(|scope| {
        let drain = scope.spawn(|| server.server.drain(Duration::from_secs(60)));
        idle.assert_closed_by_server();
        drain.join().expect("the drain")
    });
    assert_eq!((report.at_deadline, report.left), (0, 0), "{report:?}");
    server.stop();
}

/// A connection the acceptor took after the drain began (before the listener closed) learns
/// of it from the phase when it starts: its first answer closes it.
#[test]
fn a_connection_accepted_once_draining_is_answered_once_with_connection_close() {
    let server = slow_server(Duration::ZERO, Duration::from_secs(60));
    // The phase alone, the listener still open: what a connection accepted between the
    // drain's first step and its second sees.
    server.server.ops().advance(Phase::Draining);
    let mut late = server.connect();
    let response = late.get("/files/index.html", None);
    assert_eq!(response.status, 200);
    assert!(response.closes(), "{:?}", response.headers);
    late.assert_closed_by_server();
    server.stop();
}
