//! Decoder tests: framing (`Content-Length` and chunked), keep-alive, `Host`, `Expect`,
//! limits, malformed input, and property tests (proptest): random input never panics and
//! stays bounded; any split of valid requests, chunked or not, decodes the same.

use proptest::prelude::*;

use super::*;
use crate::READ_CHUNK;

/// Feeds `input` in one go and drains every request (or the first error).
fn decode_all(limits: Limits, input: &[u8]) -> Result<Vec<Request>, HttpError> {
    let mut decoder = RequestDecoder::new(limits);
    decoder.feed(input);
    drain(&mut decoder)
}

fn drain(decoder: &mut RequestDecoder) -> Result<Vec<Request>, HttpError> {
    let mut out = Vec::new();
    while let Some(request) = decoder.next_request()? {
        out.push(request);
    }
    Ok(out)
}

fn one(input: &[u8]) -> Result<Request, HttpError> {
    let mut all = decode_all(Limits::default(), input)?;
    assert_eq!(all.len(), 1, "expected exactly one request");
    Ok(all.remove(0))
}

fn error_of(input: &[u8]) -> HttpError {
    match decode_all(Limits::default(), input) {
        Err(e) => e,
        Ok(requests) => panic!("expected an error, got {requests:?}"),
    }
}

#[test]
fn simple_get() {
    let r = one(b"GET /resources?offset=5&limit=2 HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    assert_eq!(r.method, Method::Get);
    assert_eq!(r.path, "/resources");
    assert_eq!(r.query.as_deref(), Some("offset=5&limit=2"));
    assert_eq!(r.version, 1);
    assert_eq!(r.header("HOST"), Some(&b"x"[..]));
    assert!(r.body.is_empty());
    assert!(r.keep_alive);
}

#[test]
fn pipelined_requests_in_one_feed() {
    let input = b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n\
        POST /login HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello\
        HEAD /b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    let all = decode_all(Limits::default(), input).unwrap();
    assert_eq!(all.len(), 3);
    assert_eq!(
        (all[0].method.clone(), all[0].path.as_str()),
        (Method::Get, "/a")
    );
    assert_eq!(all[1].method, Method::Post);
    assert_eq!(all[1].body, b"hello");
    assert_eq!(all[2].method, Method::Head);
    assert!(!all[2].keep_alive);
}

#[test]
fn request_split_byte_by_byte() {
    let input = b"POST /login HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabcGET /x HTTP/1.1\r\nHost: x\r\n\r\n";
    let mut decoder = RequestDecoder::default();
    let mut got = Vec::new();
    for &b in input.iter() {
        decoder.feed(&[b]);
        got.extend(drain(&mut decoder).unwrap());
    }
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].body, b"abc");
    assert_eq!(got[1].path, "/x");
    assert_eq!(decoder.next_request(), Ok(None));
}

#[test]
fn every_split_point_gives_the_same_requests() {
    let input = b"GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n\
        POST /p HTTP/1.1\r\nHost: x\r\ncontent-length: 4\r\n\r\nbody";
    let whole = decode_all(Limits::default(), input).unwrap();
    for split in 0..=input.len() {
        let mut decoder = RequestDecoder::default();
        decoder.feed(&input[..split]);
        let mut got = drain(&mut decoder).unwrap();
        decoder.feed(&input[split..]);
        got.extend(drain(&mut decoder).unwrap());
        assert_eq!(got, whole, "split at {split}");
    }
}

#[test]
fn keep_alive_rules() {
    let ka = |head: &str| one(head.as_bytes()).unwrap().keep_alive;
    assert!(ka("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
    assert!(!ka(
        "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    ));
    assert!(!ka(
        "GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, CLOSE\r\n\r\n"
    ));
    assert!(!ka("GET / HTTP/1.0\r\n\r\n"));
    assert!(ka("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"));
    assert!(!ka(
        "GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n"
    ));
    assert_eq!(one(b"GET / HTTP/1.0\r\n\r\n").unwrap().version, 0);
}

#[test]
fn leading_empty_lines_are_skipped() {
    let all = decode_all(
        Limits::default(),
        b"\r\n\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n\r\n",
    )
    .unwrap();
    assert_eq!(all.len(), 1);
}

#[test]
fn bare_lf_line_ends_are_accepted() {
    let r = one(b"GET /lf HTTP/1.1\nHost: x\n\n").unwrap();
    assert_eq!(r.path, "/lf");
}

#[test]
fn head_too_large_without_its_end() {
    let mut decoder = RequestDecoder::default();
    decoder.feed(b"GET / HTTP/1.1\r\nHost: x\r\n");
    let filler = format!("X-Fill: {}\r\n", "a".repeat(100));
    while decoder.buffered() <= 32 * 1024 {
        assert_eq!(decoder.next_request(), Ok(None));
        decoder.feed(filler.as_bytes());
    }
    assert_eq!(decoder.next_request(), Err(HttpError::HeaderTooLarge));
    assert_eq!(HttpError::HeaderTooLarge.status(), 431);
}

#[test]
fn head_too_large_with_its_end() {
    let limits = Limits {
        max_head_bytes: 64,
        ..Limits::default()
    };
    let long = format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(60));
    assert_eq!(
        decode_all(limits, long.as_bytes()),
        Err(HttpError::HeaderTooLarge)
    );
    let fits = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    assert!(decode_all(limits, fits.as_bytes()).is_ok());
}

#[test]
fn the_defaults_are_nginx_like() {
    let limits = Limits::default();
    assert_eq!(limits.max_line_bytes, 8 * 1024);
    assert_eq!(limits.max_head_bytes, 32 * 1024);
    assert_eq!(limits.max_headers, 100);
    // 100 headers of nearly 8 KiB lines would pass the line limit; the total stops them.
    let line = format!("X-Big: {}\r\n", "b".repeat(8 * 1024 - 7));
    let mut input = String::from("GET / HTTP/1.1\r\nHost: x\r\n");
    input.push_str(&line);
    input.push_str("\r\n");
    assert!(
        decode_all(limits, input.as_bytes()).is_ok(),
        "one line at the limit"
    );
    let mut input = String::from("GET / HTTP/1.1\r\nHost: x\r\n");
    for _ in 0..4 {
        input.push_str(&line);
    }
    input.push_str("\r\n");
    assert_eq!(error_of(input.as_bytes()), HttpError::HeaderTooLarge);
}

#[test]
fn a_long_request_line_is_uri_too_long() {
    let limits = Limits {
        max_line_bytes: 64,
        ..Limits::default()
    };
    // At the limit: served.
    let fits = format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(64 - 14));
    assert_eq!(fits.find('\r'), Some(64));
    assert!(decode_all(limits, fits.as_bytes()).is_ok());
    // One byte more, its end here or not yet: 414, not 431.
    let long = format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(64 - 13));
    assert_eq!(
        decode_all(limits, long.as_bytes()),
        Err(HttpError::UriTooLong)
    );
    let mut decoder = RequestDecoder::new(limits);
    for byte in format!("GET /{}", "a".repeat(200)).bytes() {
        decoder.feed(&[byte]);
        if let Err(e) = decoder.next_request() {
            assert_eq!(e, HttpError::UriTooLong);
            assert_eq!(
                decoder.buffered(),
                0,
                "refused as soon as the limit is passed"
            );
            break;
        }
    }
    assert!(decoder.is_poisoned());
    assert_eq!(HttpError::UriTooLong.status(), 414);
    // A request line longer than the whole head may be, before its end: 414 too.
    let small_head = Limits {
        max_head_bytes: 32,
        ..Limits::default()
    };
    let mut decoder = RequestDecoder::new(small_head);
    decoder.feed(format!("GET /{}", "a".repeat(40)).as_bytes());
    assert_eq!(decoder.next_request(), Err(HttpError::UriTooLong));
}

#[test]
fn a_long_header_line_is_too_large_at_once() {
    let limits = Limits {
        max_line_bytes: 64,
        ..Limits::default()
    };
    let fits = format!(
        "GET / HTTP/1.1\r\nHost: x\r\nX-A: {}\r\n\r\n",
        "v".repeat(59)
    );
    assert!(decode_all(limits, fits.as_bytes()).is_ok());
    let long = format!(
        "GET / HTTP/1.1\r\nHost: x\r\nX-A: {}\r\n\r\n",
        "v".repeat(60)
    );
    assert_eq!(
        decode_all(limits, long.as_bytes()),
        Err(HttpError::HeaderTooLarge)
    );
    // Before the line ends: refused once it is longer than a line may be.
    let mut decoder = RequestDecoder::new(limits);
    decoder.feed(b"GET / HTTP/1.1\r\nHost: x\r\nX-A: ");
    assert_eq!(decoder.next_request(), Ok(None));
    decoder.feed("v".repeat(61).as_bytes());
    assert_eq!(decoder.next_request(), Err(HttpError::HeaderTooLarge));
    // Bare LF line ends count the same.
    let bare = format!("GET / HTTP/1.1\nHost: x\nX-A: {}\n\n", "v".repeat(60));
    assert_eq!(
        decode_all(limits, bare.as_bytes()),
        Err(HttpError::HeaderTooLarge)
    );
}

#[test]
fn later_http_1_minor_versions_are_served_as_http_1_1() {
    for version in ["HTTP/1.2", "HTTP/1.9"] {
        let input =
            format!("GET /v?q HTTP/1.1\r\nHost: x\r\n\r\nGET /w {version}\r\nHost: x\r\n\r\n");
        let requests = decode_all(Limits::default(), input.as_bytes()).unwrap();
        assert_eq!(requests.len(), 2, "{version}");
        assert_eq!(requests[1].version, 1, "{version}");
        assert_eq!(requests[1].path, "/w");
        assert!(
            requests[1].keep_alive,
            "{version} keeps the connection as 1.1 does"
        );
    }
    // An HTTP/1.1 rule applies: Host is required.
    assert!(matches!(
        error_of(b"GET / HTTP/1.2\r\n\r\n"),
        HttpError::BadRequest(_)
    ));
    let bare = one(b"GET / HTTP/1.3\nHost: x\n\n").unwrap();
    assert_eq!(bare.version, 1);
}

#[test]
fn other_major_versions_are_not_supported() {
    for version in ["HTTP/2.0", "HTTP/3.0", "HTTP/0.9", "HTTP/9.1"] {
        let input = format!("GET / {version}\r\nHost: x\r\n\r\n");
        assert_eq!(
            error_of(input.as_bytes()),
            HttpError::VersionNotSupported(version.into()),
        );
    }
    // The HTTP/2 connection preface sent to an HTTP/1 server.
    assert_eq!(
        error_of(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"),
        HttpError::VersionNotSupported("HTTP/2.0".into())
    );
    assert_eq!(
        HttpError::VersionNotSupported("HTTP/2.0".into()).status(),
        505
    );
    // Not a version at all: a bad request.
    for malformed in ["HTTP/1.10", "HTTP/1", "HTTP/a.1", "HTTPS/1.1"] {
        let input = format!("GET / {malformed}\r\nHost: x\r\n\r\n");
        assert!(
            matches!(error_of(input.as_bytes()), HttpError::BadRequest(_)),
            "{malformed}"
        );
    }
}

#[test]
fn too_many_headers() {
    let mut input = String::from("GET / HTTP/1.1\r\nHost: x\r\n");
    for i in 0..100 {
        input.push_str(&format!("X-{i}: v\r\n"));
    }
    input.push_str("\r\n");
    assert_eq!(error_of(input.as_bytes()), HttpError::HeaderTooLarge);
    // 100 and Host.
    let limits = Limits {
        max_headers: 101,
        ..Limits::default()
    };
    assert!(decode_all(limits, input.as_bytes()).is_ok());
}

#[test]
fn the_header_limit_holds_below_and_above_the_slots_on_the_stack() {
    let with_headers = |n: usize| {
        let mut input = String::from("GET / HTTP/1.1\r\nHost: x\r\n");
        for i in 1..n {
            input.push_str(&format!("X-{i}: v\r\n"));
        }
        input + "\r\n"
    };
    for max_headers in [
        1,
        STACK_HEADERS - 1,
        STACK_HEADERS,
        STACK_HEADERS + 1,
        3 * STACK_HEADERS,
    ] {
        let limits = Limits {
            max_headers,
            ..Limits::default()
        };
        let fits = decode_all(limits, with_headers(max_headers).as_bytes());
        assert_eq!(fits.map(|r| r[0].headers.len()), Ok(max_headers));
        let over = decode_all(limits, with_headers(max_headers + 1).as_bytes());
        assert_eq!(over, Err(HttpError::HeaderTooLarge), "{max_headers}");
    }
}

#[test]
fn body_too_large_is_refused_at_the_head() {
    let mut decoder = RequestDecoder::default();
    decoder.feed(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1048577\r\n\r\n");
    assert_eq!(decoder.next_request(), Err(HttpError::PayloadTooLarge));
    assert_eq!(HttpError::PayloadTooLarge.status(), 413);
    assert!(decoder.is_poisoned());
}

#[test]
fn body_at_the_limit_is_accepted_in_chunks_within_the_buffer_bound() {
    let limits = Limits::default();
    let mut decoder = RequestDecoder::new(limits);
    decoder.feed(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1048576\r\n\r\n");
    assert_eq!(decoder.next_request(), Ok(None));
    let chunk = vec![b'z'; READ_CHUNK];
    let mut got = Vec::new();
    for _ in 0..(1024 * 1024 / READ_CHUNK) {
        decoder.feed(&chunk);
        assert!(decoder.buffered() <= limits.max_buffered());
        got.extend(drain(&mut decoder).unwrap());
    }
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].body.len(), 1024 * 1024);
}

#[test]
fn overfeeding_without_draining_ends_with_buffer_full() {
    let limits = Limits {
        max_head_bytes: 64,
        max_line_bytes: 32,
        max_headers: 4,
        max_body_bytes: 16,
    };
    let mut decoder = RequestDecoder::new(limits);
    let request = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    let mut fed = 0;
    while fed <= limits.max_buffered() {
        decoder.feed(request);
        fed += request.len();
    }
    assert!(decoder.buffered() <= limits.max_buffered());
    let mut count = 0;
    let error = loop {
        match decoder.next_request() {
            Ok(Some(_)) => count += 1,
            Ok(None) => panic!("overfed decoder must end with an error"),
            Err(e) => break e,
        }
    };
    assert_eq!(count, decoder_capacity_in_requests(limits, request.len()));
    assert_eq!(error, HttpError::BufferFull);
    assert_eq!(error.status(), 413);
}

fn decoder_capacity_in_requests(limits: Limits, len: usize) -> usize {
    limits.max_buffered() / len
}

#[test]
fn chunked_bodies_are_decoded_and_the_connection_goes_on() {
    let input = b"POST /login HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n\
        5;ext=1\r\nuser=\r\n5\r\nadmin\r\n0\r\nX-Trailer: t\r\n\r\n\
        POST /p HTTP/1.1\r\nHost: x\r\ntransfer-encoding: , Chunked\r\n\r\n0\r\n\r\n\
        GET /next HTTP/1.1\r\nHost: x\r\n\r\n";
    let whole = decode_all(Limits::default(), input).unwrap();
    assert_eq!(whole.len(), 3);
    assert_eq!(whole[0].body, b"user=admin");
    assert!(whole[0].keep_alive);
    assert_eq!(whole[1].body, b"");
    assert_eq!(whole[2].path, "/next");
    for split in 0..=input.len() {
        let mut decoder = RequestDecoder::default();
        decoder.feed(&input[..split]);
        let mut got = drain(&mut decoder).unwrap();
        decoder.feed(&input[split..]);
        got.extend(drain(&mut decoder).unwrap());
        assert_eq!(got, whole, "split at {split}");
    }
}

#[test]
fn chunked_bodies_keep_the_body_limit_and_the_buffer_bound() {
    let limits = Limits::default();
    let mut decoder = RequestDecoder::new(limits);
    decoder.feed(b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
    assert_eq!(decoder.next_request(), Ok(None));
    // 1 MiB in 64 chunks: accepted, the buffer never holding more than a read.
    let chunk = [
        format!("{:x}\r\n", 16 * 1024).into_bytes(),
        vec![b'z'; 16 * 1024],
    ]
    .concat();
    for _ in 0..64 {
        decoder.feed(&chunk);
        assert_eq!(decoder.next_request(), Ok(None));
        assert!(decoder.buffered() <= READ_CHUNK + 16);
        decoder.feed(b"\r\n");
    }
    decoder.feed(b"0\r\n\r\n");
    let request = decoder.next_request().unwrap().unwrap();
    assert_eq!(request.body.len(), 1024 * 1024);
    // One byte more is refused as soon as its chunk-size line arrives.
    let mut over = RequestDecoder::new(limits);
    over.feed(b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
    over.feed(format!("{:x}\r\n", 1024 * 1024 + 1).as_bytes());
    assert_eq!(over.next_request(), Err(HttpError::PayloadTooLarge));
}

#[test]
fn transfer_codings_other_than_chunked_are_not_implemented() {
    for coding in [
        "gzip",
        "gzip, chunked",
        "chunked, gzip",
        "chunked;q=1",
        "identity",
    ] {
        let input = format!("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: {coding}\r\n\r\n");
        let e = error_of(input.as_bytes());
        assert!(matches!(e, HttpError::NotImplemented(_)), "{coding}: {e:?}");
        assert_eq!(e.status(), 501);
    }
}

#[test]
fn ambiguous_framing_is_refused() {
    let cases: &[&[u8]] = &[
        // RFC 9112 §6.1: the classic request-smuggling pair.
        b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\nabc",
        b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 0\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: gzip\r\n\r\nabc",
        b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, chunked\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: ,\r\n\r\n",
        b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcd\r\n",
        b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\n",
    ];
    for case in cases {
        let e = error_of(case);
        assert!(
            matches!(e, HttpError::BadRequest(_)),
            "{:?}: {e:?}",
            String::from_utf8_lossy(case)
        );
    }
}

#[test]
fn host_is_required_once_in_http_1_1() {
    let bad: &[&[u8]] = &[
        b"GET / HTTP/1.1\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n",
        b"GET / HTTP/1.0\r\nHost: a\r\nhost: b\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: a b\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: a/b\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: user@a\r\n\r\n",
    ];
    for case in bad {
        let e = error_of(case);
        assert!(
            matches!(e, HttpError::BadRequest(_)),
            "{:?}: {e:?}",
            String::from_utf8_lossy(case)
        );
    }
    for good in [
        "GET / HTTP/1.0\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: example.org:8080\r\n\r\n",
        "GET / HTTP/1.1\r\nHOST: [::1]:80\r\n\r\n",
        "GET / HTTP/1.1\r\nHost:\r\n\r\n",
    ] {
        assert!(one(good.as_bytes()).is_ok(), "{good:?}");
    }
}

#[test]
fn expect_100_continue_is_raised_while_the_body_is_awaited() {
    let mut decoder = RequestDecoder::default();
    decoder
        .feed(b"POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-Continue\r\nContent-Length: 3\r\n\r\n");
    assert_eq!(decoder.next_request(), Ok(None));
    assert!(decoder.take_continue());
    assert!(!decoder.take_continue(), "raised once");
    decoder.feed(b"abc");
    assert_eq!(decoder.next_request().unwrap().unwrap().body, b"abc");

    // Chunked, the same.
    decoder.feed(
        b"POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n",
    );
    assert_eq!(decoder.next_request(), Ok(None));
    assert!(decoder.take_continue());
    decoder.feed(b"1\r\na\r\n0\r\n\r\n");
    assert_eq!(decoder.next_request().unwrap().unwrap().body, b"a");

    // Not raised: the body came with the head, there is no body, or HTTP/1.0.
    for quiet in [
        "POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nz",
        "GET / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n\r\n",
        "POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n",
        "POST / HTTP/1.0\r\nExpect: something-else\r\nContent-Length: 1\r\n\r\n",
    ] {
        let mut decoder = RequestDecoder::default();
        decoder.feed(quiet.as_bytes());
        let _ = drain(&mut decoder).unwrap();
        assert!(!decoder.take_continue(), "{quiet:?}");
    }

    // Refused before the body: no interim answer either.
    let mut decoder = RequestDecoder::default();
    decoder.feed(
        b"POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 1048577\r\n\r\n",
    );
    assert_eq!(decoder.next_request(), Err(HttpError::PayloadTooLarge));
    assert!(!decoder.take_continue());
}

#[test]
fn the_request_awaiting_its_body_can_be_looked_at() {
    let mut decoder = RequestDecoder::default();
    decoder.feed(
        b"POST /upload HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n",
    );
    assert_eq!(decoder.next_request(), Ok(None));
    let head = decoder.awaiting_body().expect("a head awaiting its body");
    assert_eq!(head.method, Method::Post);
    assert_eq!(head.path, "/upload");
    assert!(decoder.take_continue());
    decoder.feed(b"abc");
    assert_eq!(decoder.next_request().unwrap().unwrap().body, b"abc");
    assert!(decoder.awaiting_body().is_none());
    // Chunked: the same, until the last chunk.
    decoder.feed(b"POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nz\r\n");
    assert_eq!(decoder.next_request(), Ok(None));
    assert_eq!(decoder.awaiting_body().map(|r| r.path.as_str()), Some("/c"));
    decoder.feed(b"0\r\n\r\n");
    assert_eq!(decoder.next_request().unwrap().unwrap().body, b"z");
    assert!(decoder.awaiting_body().is_none());
}

#[test]
fn unknown_expectations_fail() {
    for expect in ["something-else", "100-continue, x", "100-continue=1"] {
        let input =
            format!("POST / HTTP/1.1\r\nHost: x\r\nExpect: {expect}\r\nContent-Length: 1\r\n\r\n");
        let e = error_of(input.as_bytes());
        assert!(
            matches!(e, HttpError::ExpectationFailed(_)),
            "{expect}: {e:?}"
        );
        assert_eq!(e.status(), 417);
    }
}

#[test]
fn bad_content_lengths() {
    for value in [
        "abc",
        "-1",
        "+5",
        "",
        "1 2",
        "5, 5",
        "0x10",
        "99999999999999999999999",
    ] {
        let input = format!("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: {value}\r\n\r\n");
        let e = error_of(input.as_bytes());
        assert!(matches!(e, HttpError::BadRequest(_)), "{value:?}: {e:?}");
        assert_eq!(e.status(), 400);
    }
    let conflicting =
        b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab";
    assert!(matches!(error_of(conflicting), HttpError::BadRequest(_)));
    let agreeing =
        b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\ncontent-length: 02\r\n\r\nab";
    assert_eq!(one(agreeing).unwrap().body, b"ab");
}

#[test]
fn huge_but_valid_content_length_is_too_large() {
    let input = format!(
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n",
        u64::MAX
    );
    assert_eq!(error_of(input.as_bytes()), HttpError::PayloadTooLarge);
}

#[test]
fn malformed_heads_are_bad_requests() {
    let cases: &[&[u8]] = &[
        b"\x00\x01\x02garbage\r\n\r\n",
        b"GET /\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: x\r\nBad Header: x\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: x\r\nX: a\x01b\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: x\r\n: novalue\r\n\r\n",
        b"GET\t/ HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /a\x00b HTTP/1.1\r\nHost: x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\n\r\n",
    ];
    for case in cases {
        let e = error_of(case);
        assert!(
            matches!(e, HttpError::BadRequest(_)),
            "{:?}: {e:?}",
            String::from_utf8_lossy(case)
        );
    }
}

#[test]
fn other_methods_are_kept_by_name() {
    let r = one(b"DELETE /x HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    assert_eq!(r.method, Method::Other("DELETE".into()));
}

#[test]
fn errors_poison_the_decoder() {
    let mut decoder = RequestDecoder::default();
    decoder.feed(b"garbage\r\n\r\n");
    let e = decoder.next_request().unwrap_err();
    decoder.feed(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(decoder.next_request(), Err(e));
    assert_eq!(decoder.buffered(), 0);
}

#[test]
fn requests_before_an_error_are_delivered() {
    let mut decoder = RequestDecoder::default();
    decoder.feed(b"GET /ok HTTP/1.1\r\nHost: x\r\n\r\nnonsense\r\n\r\n");
    assert_eq!(decoder.next_request().unwrap().unwrap().path, "/ok");
    assert!(decoder.next_request().is_err());
}

/// Pieces of HTTP (and of broken HTTP) that random inputs are made of, so that the
/// properties below reach the decoder's deep states, not just its first parse error.
const FRAGMENTS: &[&[u8]] = &[
    b"GET ",
    b"POST ",
    b"HEAD ",
    b"/",
    b"/files/../x",
    b"?q=1",
    b" HTTP/1.1",
    b" HTTP/1.0",
    b"\r\n",
    b"\n",
    b"\r",
    b"Content-Length: ",
    b"Content-Length: 18446744073709551616",
    b"Transfer-Encoding: chunked",
    b"Transfer-Encoding: chunked\r\n",
    b"Host: x\r\n",
    b"Expect: 100-continue\r\n",
    b"5\r\nhello\r\n",
    b"0\r\n\r\n",
    b"0\r\nX-T: 1\r\n",
    b";ext=1",
    b"ffffffffffffffffff\r\n",
    b"Connection: close",
    b"Cookie: session=abc; x",
    b": ",
    b"12",
    b"-1",
    b"\x00",
    b"\xff\xfe",
    b"\r\n\r\n",
];

/// Limits small enough that random inputs cross them.
const SMALL: Limits = Limits {
    max_head_bytes: 256,
    max_line_bytes: 64,
    max_headers: 8,
    max_body_bytes: 64,
};

/// An input: up to 40 pieces, each a fragment or up to 15 random bytes.
fn input() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        2 => proptest::sample::select(FRAGMENTS).prop_map(<[u8]>::to_vec),
        1 => proptest::collection::vec(any::<u8>(), 0..16),
    ];
    proptest::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat())
}

/// A body's wire form in the chunked coding: `body` cut at `cuts` (chunk sizes in hex,
/// upper or lower case, some with an extension), then the last chunk and maybe a trailer.
fn chunked(body: &[u8], cuts: &[usize], upper: bool, trailer: bool) -> Vec<u8> {
    let mut wire = Vec::new();
    let mut rest = body;
    let mut cuts = cuts.iter().cycle();
    while !rest.is_empty() {
        let n = (*cuts.next().unwrap_or(&1)).clamp(1, rest.len());
        let size = if upper {
            format!("{n:X}")
        } else {
            format!("{n:x}")
        };
        let ext = if n.is_multiple_of(3) {
            ";name=\"v\""
        } else {
            ""
        };
        wire.extend_from_slice(format!("{size}{ext}\r\n").as_bytes());
        wire.extend_from_slice(&rest[..n]);
        wire.extend_from_slice(b"\r\n");
        rest = &rest[n..];
    }
    wire.extend_from_slice(b"0\r\n");
    if trailer {
        wire.extend_from_slice(b"X-Trailer: yes\r\n");
    }
    wire.extend_from_slice(b"\r\n");
    wire
}

/// A valid request and its body: method, path, optional keep-alive and expect headers, and
/// a body within the limits, framed by `Content-Length` or chunked.
fn valid_request() -> impl Strategy<Value = (Vec<u8>, Vec<u8>)> {
    (
        proptest::sample::select(&["GET", "POST", "HEAD"][..]),
        "/[a-z0-9]{0,12}",
        (any::<bool>(), any::<bool>()),
        proptest::collection::vec(any::<u8>(), 0..32),
        proptest::option::of((
            proptest::collection::vec(1usize..12, 1..6),
            any::<bool>(),
            any::<bool>(),
        )),
    )
        .prop_map(|(method, path, (close, expect), body, chunks)| {
            let mut request = format!("{method} {path} HTTP/1.1\r\nHost: x\r\n");
            if close {
                request.push_str("Connection: close\r\n");
            }
            if expect {
                request.push_str("Expect: 100-continue\r\n");
            }
            let framed = match &chunks {
                Some((cuts, upper, trailer)) => {
                    request.push_str("Transfer-Encoding: chunked\r\n\r\n");
                    chunked(&body, cuts, *upper, *trailer)
                }
                None => {
                    request.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
                    body.clone()
                }
            };
            ([request.into_bytes(), framed].concat(), body)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Whatever arrives, in whatever pieces: no panic, the buffer stays within its bound, no
    /// body exceeds the limit, and every call makes progress.
    #[test]
    fn random_input_never_panics_and_stays_bounded(
        input in input(),
        cuts in proptest::collection::vec(1usize..64, 1..64),
    ) {
        let mut decoder = RequestDecoder::new(SMALL);
        let mut rest = &input[..];
        let mut cuts = cuts.iter().cycle();
        while !rest.is_empty() {
            let take = (*cuts.next().unwrap_or(&1)).min(rest.len());
            decoder.feed(&rest[..take]);
            rest = &rest[take..];
            prop_assert!(decoder.buffered() <= SMALL.max_buffered());
            let mut calls = 0;
            while let Ok(Some(request)) = decoder.next_request() {
                prop_assert!(request.body.len() <= SMALL.max_body_bytes);
                calls += 1;
                prop_assert!(calls <= input.len(), "decoder made no progress");
            }
            if decoder.take_continue() {
                prop_assert!(decoder.pending() > 0, "a 100 is only owed for a pending body");
            }
        }
    }

    /// Valid pipelined requests decode the same however the bytes are split.
    #[test]
    fn any_split_of_valid_requests_decodes_the_same(
        requests in proptest::collection::vec(valid_request(), 1..6),
        split in any::<proptest::sample::Index>(),
    ) {
        let input: Vec<u8> = requests.iter().flat_map(|(wire, _)| wire.clone()).collect();
        let whole = decode_all(Limits::default(), &input).expect("valid requests decode");
        prop_assert_eq!(whole.len(), requests.len());
        for (request, (_, body)) in whole.iter().zip(&requests) {
            prop_assert_eq!(&request.body, body);
        }
        let split = split.index(input.len() + 1);
        let mut decoder = RequestDecoder::default();
        decoder.feed(&input[..split]);
        let mut got = drain(&mut decoder).expect("a prefix of valid requests");
        decoder.feed(&input[split..]);
        got.extend(drain(&mut decoder).expect("the rest"));
        prop_assert_eq!(got, whole);
    }
}
