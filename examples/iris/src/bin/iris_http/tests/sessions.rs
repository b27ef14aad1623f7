//! The session table under a reconnect storm: a client that reconnects again and again without
//! a cookie (every connection a new anonymous session) holds at most its per-client bound, and
//! idle anonymous sessions expire, while a logged-in session stays.

use super::*;
use crate::sessions::SessionLimits;

/// `(sessions, clients)` from `/status/sessions`, as the admin session `admin` sees it.
fn table(addr: SocketAddr, admin: &str) -> (usize, usize) {
    let mut client = Client::connect(addr);
    let response = client.get("/status/sessions", Some(admin));
    assert_eq!(response.status, 200, "{}", response.text());
    let text = response.text();
    let value = |key: &str| -> usize {
        text.lines()
            .find_map(|line| line.strip_prefix(key)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("no `{key}` in {text:?}"))
    };
    (value("sessions "), value("clients "))
}

#[test]
fn a_reconnect_storm_is_bounded_per_client_and_idle_sessions_expire() {
    let mut options = demo_options();
    options.sessions = SessionLimits {
        per_client: 8,
        anonymous_idle: Duration::from_millis(300),
        ..SessionLimits::default()
    };
    let server = TestServer::start(options);
    let addr = server.addr();
    let admin = login(addr, "admin", "secret");
    // The admin's session alone: a login starts no anonymous session before it.
    assert_eq!(table(addr, &admin), (1, 1));

    // 200 connections without a cookie, one request each under a session path
    // (`/resources`): 200 new anonymous sessions.
    for n in 0..200 {
        let mut client = Client::connect(addr);
        let response = client.get(&format!("/resources/{}", n % 1000 + 1), None);
        assert_eq!(response.status, 200, "{}", response.text());
        assert!(response.session_cookie().is_some(), "a new session");
        if n % 50 == 49 {
            let (sessions, clients) = table(addr, &admin);
            assert!(sessions <= 8, "{sessions} sessions held for one client");
            assert_eq!(clients, 1);
        }
    }
    let (sessions, _) = table(addr, &admin);
    assert!(sessions <= 8, "{sessions} sessions held for one client");

    // Idle for 300 ms, the anonymous sessions are dropped; the admin's (in use, and with
    // the logged-in limit of 30 minutes) stays.
    wait_until("the idle anonymous sessions to expire", || {
        table(addr, &admin) == (1, 1)
    });
    assert_eq!(
        Client::connect(addr).get("/status", Some(&admin)).status,
        200,
        "the admin is still logged in"
    );
    server.wait_for_baseline();
    server.stop();
}
