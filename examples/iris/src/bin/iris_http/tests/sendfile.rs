//! Bodies of `SENDFILE_MIN` bytes and more are sent from the open file by the socket process
//! (`SocketMsg::SendFile`): byte-exact, whole or as a range, after HEAD's head alone, through
//! a slow reader, with the file opened by the handler or by an `AsyncFile` process.

use super::*;
use crate::server::SENDFILE_MIN;

/// `len` patterned bytes (period 251, prime: a misplaced chunk shows).
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

fn get_with(path: &str, headers: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n{headers}\r\n")
}

/// Every size around the threshold, and an odd one over 1 MiB, pipelined on one connection,
/// with a HEAD among them.
fn serves_files_byte_exact(file_io_process: bool) {
    let root = TempRoot::new("sendfile");
    let min = usize::try_from(SENDFILE_MIN).expect("small");
    let files = [
        ("big.bin", pattern(1024 * 1024 + 12_345)),
        ("edge.bin", pattern(min)),
        ("below.bin", pattern(min - 1)),
        ("small.txt", b"small file\n".to_vec()),
    ];
    for (name, bytes) in &files {
        root.write(name, bytes);
    }
    let mut options = Options::new(root.path().to_path_buf(), Users::default_demo());
    options.file_io_process = file_io_process;
    let server = TestServer::start(options);
    let mut client = server.connect();
    let mut burst = String::new();
    for (name, _) in &files {
        burst += &get(&format!("/files/{name}"), None);
    }
    burst += "HEAD /files/big.bin HTTP/1.1\r\nHost: localhost\r\n\r\n";
    burst += &get("/files/big.bin", None);
    client.send(burst.as_bytes());
    for (name, bytes) in &files {
        let response = client.read_response();
        assert_eq!(response.status, 200, "{name}: {}", response.text());
        assert_eq!(response.body.len(), bytes.len(), "{name}");
        assert!(
            response.body == *bytes,
            "{name}: the body differs from the file"
        );
        assert!(response.header("etag").is_some(), "{name}");
        assert_eq!(response.header("accept-ranges"), Some("bytes"), "{name}");
    }
    let head = client.read_head_response();
    assert_eq!(head.status, 200);
    let big = &files[0].1;
    assert_eq!(head.header("content-length"), Some(&*big.len().to_string()));
    assert_eq!(
        head.header("content-type"),
        Some("application/octet-stream")
    );
    // The GET after the HEAD parses: no body was sent after the HEAD's head.
    let again = client.read_response();
    assert_eq!(again.status, 200);
    assert!(
        again.body == *big,
        "the body after a HEAD differs from the file"
    );
    drop(client);
    server.wait_for_baseline();
}

#[test]
fn large_files_are_sent_from_the_file_byte_exact() {
    serves_files_byte_exact(false);
}

#[test]
fn large_files_opened_by_an_async_file_process_are_sent_byte_exact() {
    serves_files_byte_exact(true);
}

#[test]
fn ranges_of_large_files_are_sent_from_the_file() {
    let root = TempRoot::new("sendfile-range");
    let bytes = pattern(1024 * 1024 + 7);
    root.write("big.bin", &bytes);
    let total = bytes.len();
    let server = TestServer::start(Options::new(
        root.path().to_path_buf(),
        Users::default_demo(),
    ));
    let mut client = server.connect();
    // Ranges above and below the threshold, a suffix, and one past the end.
    let cases = [
        ("bytes=1000-200999", 1000, 200_999),
        ("bytes=-70000", total - 70_000, total - 1),
        ("bytes=5-9", 5, 9),
    ];
    for (range, first, last) in cases {
        let response =
            client.exchange(get_with("/files/big.bin", &format!("Range: {range}\r\n")).as_bytes());
        assert_eq!(response.status, 206, "{range}: {}", response.text());
        assert_eq!(
            response.header("content-range"),
            Some(&*format!("bytes {first}-{last}/{total}")),
            "{range}"
        );
        assert!(
            response.body == bytes[first..=last],
            "{range}: the body differs"
        );
    }
    let past = client
        .exchange(get_with("/files/big.bin", &format!("Range: bytes={total}-\r\n")).as_bytes());
    assert_eq!(past.status, 416);
    // A current copy: 304, no body, and the connection goes on.
    let etag = past.header("etag").map(str::to_owned);
    let full = client.get("/files/big.bin", None);
    let etag = etag
        .or_else(|| full.header("etag").map(str::to_owned))
        .expect("an ETag");
    let cached = client
        .exchange(get_with("/files/big.bin", &format!("If-None-Match: {etag}\r\n")).as_bytes());
    assert_eq!(cached.status, 304);
    assert!(cached.body.is_empty());
    let after = client.get("/files/big.bin", None);
    assert!(after.body == bytes);
}

#[test]
fn a_slow_reader_gets_every_byte() {
    let root = TempRoot::new("sendfile-slow");
    // More than the kernel's buffers hold while the client sleeps.
    let bytes = pattern(3 * 1024 * 1024 + 1);
    root.write("big.bin", &bytes);
    let server = TestServer::start(Options::new(
        root.path().to_path_buf(),
        Users::default_demo(),
    ));
    let mut client = server.connect();
    let request = get("/files/big.bin", None);
    client.send(format!("{request}{request}").as_bytes());
    std::thread::sleep(Duration::from_millis(200));
    // The first megabyte 4 KiB at a time, with pauses.
    let mut chunk = [0u8; 4096];
    while client.buf.len() < 1024 * 1024 {
        let n = client.stream.read(&mut chunk).expect("read");
        assert_ne!(n, 0, "the server closed early");
        client.buf.extend_from_slice(&chunk[..n]);
        std::thread::sleep(Duration::from_micros(300));
    }
    for _ in 0..2 {
        let response = client.read_response();
        assert_eq!(response.status, 200);
        assert!(response.body == bytes, "the body differs from the file");
    }
}
