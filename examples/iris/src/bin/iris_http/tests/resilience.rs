//! Clients that misbehave: never read, or go away mid-request. The server stays responsive
//! to everyone else, holds bounded memory for them, and frees everything once they are gone.

use super::*;

/// A client pipelines far more GETs of a 1 MiB file than fit in any buffer and never reads:
/// the server stops reading from it, then gives up on it and closes its connection (more
/// than 4 MiB queued for it), while other clients keep being served.
#[test]
fn a_client_that_never_reads_does_not_stall_the_others() {
    let root = TempRoot::new("slow");
    let big: Vec<u8> = (0..1024 * 1024).map(|i: u32| (i % 251) as u8).collect();
    root.write("big.bin", &big);
    root.write("small.txt", b"small file\n");
    let options = Options::new(root.path().to_path_buf(), Users::default_demo());
    // This test is about socket backpressure, not admission control: leave room for all.
    let tuning = Tuning {
        thresholds: [10_000; 3],
        file_budget: 1_000_000,
        ..Tuning::default()
    };
    let server = TestServer::start_tuned(options, tuning);

    let mut slow = server.connect();
    let requests = 200;
    let burst: String = (0..requests).map(|_| get("/files/big.bin", None)).collect();
    slow.send(burst.as_bytes());

    // Other clients, on fresh connections, meanwhile.
    let addr = server.addr();
    let others = std::thread::spawn(move || {
        for _ in 0..20 {
            let mut client = Client::connect(addr);
            let file = client.get("/files/small.txt", None);
            assert_eq!(file.status, 200, "{}", file.text());
            assert_eq!(file.body, b"small file\n");
            let cookie = file.session_cookie();
            let resource = client.get("/resources/7", cookie.as_deref());
            assert_eq!(resource.status, 200, "{}", resource.text());
        }
    });
    others.join().expect("the other clients were all served");
    // The server closes the slow connection by itself: its processes terminate and its
    // socket is deregistered although the client still holds its end open.
    server.wait_for_baseline();

    // What the slow client can still read is what the kernel buffered, far less than it
    // asked for, and the stream ends (or is reset).
    let mut answered = 0;
    let mut ended = false;
    while !ended {
        match slow.try_read_response() {
            Ok(response) => {
                assert_eq!(response.status, 200);
                assert_eq!(response.body.len(), big.len());
                answered += 1;
            }
            Err(e) => {
                assert!(
                    matches!(
                        e.kind(),
                        io::ErrorKind::UnexpectedEof | io::ErrorKind::ConnectionReset
                    ),
                    "the slow connection ended with {e}"
                );
                ended = true;
            }
        }
    }
    assert!(
        answered < requests,
        "{answered} of {requests} answers reached a client that never read"
    );
    drop(slow);
    server.wait_for_baseline();
    server.stop();
}

/// Clients that go away at every point of a request leave nothing behind.
#[test]
fn disconnects_mid_request_leak_nothing() {
    let server = TestServer::start(demo_options());
    let partials: [&[u8]; 7] = [
        b"",
        b"GET /files/ind",
        b"GET /files/index.html HTTP/1.1\r\nHost: localhost\r\nX-Partial: ab",
        b"POST /login HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nuser=ad",
        // Whole requests, dropped before the answers are read.
        b"GET /files/index.html HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /resources HTTP/1.1\r\nHost: x\r\n\r\nGET /resources/5 HTTP/1.1\r\nHost: x\r\n\r\n",
        b"POST /login HTTP/1.1\r\nHost: x\r\nContent-Length: 26\r\n\r\nuser=admin&password=secret",
    ];
    for bytes in partials {
        eprintln!("disconnect after {:?}", String::from_utf8_lossy(bytes));
        let mut client = server.connect();
        if !bytes.is_empty() {
            client.send(bytes);
        }
        drop(client);
        server.wait_for_baseline();
    }
    // Many at once, some with answers (large ones) still being written.
    let mut clients = Vec::new();
    for i in 0..20 {
        let mut client = server.connect();
        let burst: String = (0..i).map(|_| get("/files/map.svg", None)).collect();
        client.send(burst.as_bytes());
        client.send(partials[i % partials.len()]);
        clients.push(client);
    }
    drop(clients);
    eprintln!("20 disconnects at once");
    server.wait_for_baseline();

    // A client that half-closes after its request is still answered, then closed.
    eprintln!("half-close");
    let mut client = server.connect();
    client.send(get("/resources/9", None).as_bytes());
    client.shutdown_write();
    let response = client.read_response();
    assert_eq!(response.status, 200);
    client.assert_closed_by_server();
    drop(client);
    server.wait_for_baseline();

    // And the server still serves.
    assert_eq!(server.connect().get("/files/index.html", None).status, 200);
    server.wait_for_baseline();
    server.stop();
}

/// Several connections pipelining file requests at once: every request is answered, with
/// the file or with a 503 (after which the client stops reading), none is left without an
/// answer.
#[test]
fn concurrent_pipelined_file_requests_are_all_answered() {
    let server = TestServer::start(demo_options());
    let svg = std::fs::read(demo_root().join("map.svg")).expect("map.svg");
    let low = std::fs::read(demo_root().join("map.low.svg")).expect("map.low.svg");
    let addr = server.addr();
    let clients: Vec<_> = (0..20)
        .map(|_| {
            let (svg, low) = (svg.clone(), low.clone());
            std::thread::spawn(move || -> Result<(usize, usize), String> {
                let mut client = Client::connect(addr);
                let burst: String = (0..16).map(|_| get("/files/map.svg", None)).collect();
                client.send(burst.as_bytes());
                let (mut ok, mut shed) = (0, 0);
                for i in 0..16 {
                    let response = client
                        .try_read_response()
                        .map_err(|e| format!("answer {i} of 16 never came: {e}"))?;
                    match response.status {
                        200 if response.body == svg || response.body == low => ok += 1,
                        503 => {
                            shed += 1;
                            break;
                        }
                        status => return Err(format!("answer {i}: {status}")),
                    }
                }
                Ok((ok, shed))
            })
        })
        .collect();
    let results: Vec<_> = clients
        .into_iter()
        .map(|c| c.join().expect("a client thread"))
        .collect();
    let back_to_baseline = {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if server.rt.live_processes() == server.baseline && server.registrations() == 1 {
                break true;
            }
            if Instant::now() > deadline {
                break false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    let files = server
        .rt
        .stats()
        .groups
        .into_iter()
        .find(|g| g.name == "files");
    let rejected = files.map(|g| g.counts.rejected);
    server.stop();
    for result in &results {
        assert!(
            result.is_ok(),
            "{results:?} (files group rejected {rejected:?})"
        );
    }
    assert!(back_to_baseline, "processes left behind");
}

/// Connections that hold the server without using it are let go: an idle keep-alive
/// connection is closed, a request that never finishes arriving is answered 408.
#[test]
fn idle_and_slow_connections_are_let_go() {
    let mut options = demo_options();
    options.idle_timeout = Duration::from_millis(200);
    options.request_timeout = Duration::from_millis(200);
    let server = TestServer::start(options);

    // Connected, never a byte.
    let mut silent = server.connect();
    silent.assert_closed_by_server();

    // Served once, then idle.
    let mut idle = server.connect();
    assert_eq!(idle.get("/resources/1", None).status, 200);
    idle.assert_closed_by_server();

    // A head that never ends, and a body that never comes.
    let mut slow_head = server.connect();
    slow_head.send(b"GET /resources/1 HTTP/1.1\r\nHost: x\r\n");
    let mut slow_body = server.connect();
    slow_body.send(b"POST /login HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\n\r\nuser=");
    for client in [&mut slow_head, &mut slow_body] {
        let response = client.read_response();
        assert_eq!(response.status, 408);
        assert!(response.closes());
        client.assert_closed_by_server();
    }
    drop((silent, idle, slow_head, slow_body));
    server.wait_for_baseline();
    server.stop();
}
