//! Reading one HTTP/1.1 response off a keep-alive connection: the head parsed by httparse,
//! the few headers the loop acts on, and the body (counted and discarded; `Content-Length`
//! framing or until close). Every malformed input comes back as an error, never a panic, and
//! nothing is buffered without bound.

use std::io::{self, Read};

/// A response head larger than this is treated as malformed rather than buffered forever.
pub const MAX_HEAD: usize = 64 * 1024;

/// Bytes asked of the socket per read.
const READ_CHUNK: usize = 16 * 1024;

/// What the loop needs to know about one response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// The server will close the connection after this response, so the next request must
    /// reconnect (503 under overload, `Connection: close`, HTTP/1.0, or a body ended by EOF).
    pub close: bool,
    /// `session=...` from a `Set-Cookie`, ready to send back in a `Cookie` header.
    pub session_cookie: Option<String>,
    /// Body bytes read.
    pub body_len: usize,
    /// `Retry-After` in seconds, if the server sent one.
    pub retry_after: Option<u64>,
}

/// Why no response was read; each kind is counted separately.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HttpError {
    /// A connect, read or write timed out.
    Timeout,
    /// The connection ended before any byte of the response: on a reused keep-alive
    /// connection this is the server having closed it while idle, which is worth one retry.
    Closed,
    /// The connection ended part-way through a response.
    Truncated,
    /// Any other socket error.
    Io(io::ErrorKind),
    /// The bytes were not a response this reader understands.
    Malformed(&'static str),
}

/// Maps a socket error; timeouts surface as `WouldBlock` or `TimedOut` depending on platform.
pub fn io_error(e: &io::Error) -> HttpError {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => HttpError::Timeout,
        kind => HttpError::Io(kind),
    }
}

/// How the body's end is found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Body {
    Length(usize),
    UntilClose,
}

/// A parsed response head; `len` is its size in bytes including the blank line.
#[derive(Debug)]
struct Head {
    status: u16,
    close: bool,
    session_cookie: Option<String>,
    retry_after: Option<u64>,
    body: Body,
    len: usize,
}

/// Reads one response from `r`. `buf` carries bytes read past the previous response and keeps
/// any read past this one, so it must stay with the connection and be cleared on reconnect.
pub fn read_response<R: Read>(r: &mut R, buf: &mut Vec<u8>) -> Result<Response, HttpError> {
    let mut got_any = !buf.is_empty();
    loop {
        let head = loop {
            if let Some(head) = parse_head(buf)? {
                break head;
            }
            match fill(r, buf) {
                Ok(0) if got_any => return Err(HttpError::Truncated),
                Ok(0) => return Err(HttpError::Closed),
                Ok(_) => got_any = true,
                Err(HttpError::Io(kind)) if is_reset(kind) && !got_any => {
                    return Err(HttpError::Closed)
                }
                Err(HttpError::Io(kind)) if is_reset(kind) => return Err(HttpError::Truncated),
                Err(e) => return Err(e),
            }
        };
        buf.drain(..head.len);
        if (100..200).contains(&head.status) {
            // Interim responses carry no body; the real one follows.
            continue;
        }
        let body_len = read_body(r, buf, head.body)?;
        return Ok(Response {
            status: head.status,
            close: head.close || head.body == Body::UntilClose,
            session_cookie: head.session_cookie,
            body_len,
            retry_after: head.retry_after,
        });
    }
}

/// Whether an error kind means the peer dropped the connection.
pub fn is_reset(kind: io::ErrorKind) -> bool {
    matches!(
        kind,
        io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe
            | io::ErrorKind::UnexpectedEof
    )
}

/// Appends one read's worth of bytes to `buf`; returns how many (0 at EOF).
fn fill<R: Read>(r: &mut R, buf: &mut Vec<u8>) -> Result<usize, HttpError> {
    let old = buf.len();
    buf.resize(old + READ_CHUNK, 0);
    loop {
        match r.read(&mut buf[old..]) {
            Ok(n) => {
                buf.truncate(old + n);
                return Ok(n);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                buf.truncate(old);
                return Err(io_error(&e));
            }
        }
    }
}

/// Consumes the body, keeping at most one read's worth in memory, and leaves any bytes past it
/// in `buf`.
fn read_body<R: Read>(r: &mut R, buf: &mut Vec<u8>, body: Body) -> Result<usize, HttpError> {
    let truncated = |e| match e {
        HttpError::Io(kind) if is_reset(kind) => HttpError::Truncated,
        e => e,
    };
    match body {
        Body::Length(n) => {
            let mut have = buf.len().min(n);
            buf.drain(..have);
            while have < n {
                let got = fill(r, buf).map_err(truncated)?;
                if got == 0 {
                    return Err(HttpError::Truncated);
                }
                let take = got.min(n - have);
                buf.drain(..take);
                have += take;
            }
            Ok(n)
        }
        Body::UntilClose => {
            let mut total = buf.len();
            buf.clear();
            loop {
                let got = fill(r, buf).map_err(truncated)?;
                if got == 0 {
                    return Ok(total);
                }
                total += got;
                buf.clear();
            }
        }
    }
}

/// Headers read per response; a response with more is malformed.
const MAX_HEADERS: usize = 64;

/// `Ok(None)` until the blank line ending the head has arrived. The status line and the
/// headers are httparse's; what they mean for the loop (framing, keep-alive, the session
/// cookie, `Retry-After`) is here.
fn parse_head(buf: &[u8]) -> Result<Option<Head>, HttpError> {
    use HttpError::Malformed;
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    let len = match response.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD => {
            return Err(Malformed("response head too long"));
        }
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(Malformed("too many headers")),
        Err(httparse::Error::Status) => return Err(Malformed("bad status code")),
        Err(httparse::Error::Version) => return Err(Malformed("not an HTTP/1.x status line")),
        Err(_) => return Err(Malformed("malformed response head")),
    };
    if len > MAX_HEAD {
        return Err(Malformed("response head too long"));
    }
    let status = response.code.ok_or(Malformed("no status code"))?;
    if status < 100 {
        return Err(Malformed("status code below 100"));
    }
    let http10 = response.version == Some(0);

    let mut close = http10;
    let mut length: Option<usize> = None;
    let mut session_cookie = None;
    let mut retry_after = None;
    for header in response.headers.iter() {
        let name = header.name;
        let value = std::str::from_utf8(header.value)
            .map_err(|_| Malformed("header value is not UTF-8"))?
            .trim();
        if name.eq_ignore_ascii_case("content-length") {
            let n: usize = value.parse().map_err(|_| Malformed("bad content-length"))?;
            if length.is_some_and(|prev| prev != n) {
                return Err(Malformed("conflicting content-length headers"));
            }
            length = Some(n);
        } else if name.eq_ignore_ascii_case("connection") {
            for token in value.split(',').map(str::trim) {
                if token.eq_ignore_ascii_case("close") {
                    close = true;
                } else if token.eq_ignore_ascii_case("keep-alive") && http10 {
                    close = false;
                }
            }
        } else if name.eq_ignore_ascii_case("transfer-encoding")
            && !value.eq_ignore_ascii_case("identity")
        {
            return Err(Malformed("transfer-encoding is not supported"));
        } else if name.eq_ignore_ascii_case("retry-after") {
            // Delay-seconds only; an HTTP date is ignored (the server sends seconds).
            retry_after = value.parse().ok();
        } else if name.eq_ignore_ascii_case("set-cookie") {
            let pair = value.split(';').next().unwrap_or_default().trim();
            if pair
                .split_once('=')
                .is_some_and(|(n, _)| n.trim() == "session")
            {
                session_cookie = Some(pair.to_string());
            }
        }
    }
    let body = match length {
        Some(n) => Body::Length(n),
        None if status < 200 || status == 204 || status == 304 => Body::Length(0),
        // Without a length the body runs to EOF (RFC 9112, 6.3).
        None => Body::UntilClose,
    };
    Ok(Some(Head {
        status,
        close,
        session_cookie,
        retry_after,
        body,
        len,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hands out the input in fixed-size pieces, to split heads and bodies across reads.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(self.data.len()).min(out.len());
            out[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    fn read_all(data: &[u8], step: usize) -> Vec<Result<Response, HttpError>> {
        let mut r = Trickle { data, step };
        let mut buf = Vec::new();
        let mut out = Vec::new();
        loop {
            let res = read_response(&mut r, &mut buf);
            let stop = res.is_err();
            out.push(res);
            if stop {
                return out;
            }
        }
    }

    const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
    const BUSY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\n\
        Connection: close\r\nContent-Length: 4\r\n\r\nbusy";

    #[test]
    fn status_length_and_keep_alive() {
        let r = read_all(OK, 1000);
        assert_eq!(
            r[0],
            Ok(Response {
                status: 200,
                close: false,
                session_cookie: None,
                body_len: 5,
                retry_after: None,
            })
        );
        assert_eq!(r[1], Err(HttpError::Closed));
    }

    #[test]
    fn retry_after_is_read() {
        let r = read_all(BUSY, 1000);
        assert_eq!(r[0].as_ref().map(|r| r.retry_after), Ok(Some(1)));
    }

    #[test]
    fn connection_close_and_503() {
        let r = read_all(BUSY, 1000);
        let resp = r[0].clone().unwrap();
        assert_eq!((resp.status, resp.close, resp.body_len), (503, true, 4));
    }

    #[test]
    fn session_cookie_is_extracted() {
        let data = b"HTTP/1.1 200 OK\r\nset-cookie: theme=dark\r\n\
            Set-Cookie: session=tok123; Path=/; HttpOnly\r\nContent-Length: 0\r\n\r\n";
        let resp = read_all(data, 7)[0].clone().unwrap();
        assert_eq!(resp.session_cookie.as_deref(), Some("session=tok123"));
    }

    #[test]
    fn responses_split_across_reads_and_packed_into_one() {
        let mut two = OK.to_vec();
        two.extend_from_slice(BUSY);
        for step in [1, 2, 3, 17, 40, 10_000] {
            let r = read_all(&two, step);
            assert_eq!(r.len(), 3, "step {step}: {r:?}");
            assert_eq!(r[0].as_ref().map(|r| r.status), Ok(200), "step {step}");
            assert_eq!(r[1].as_ref().map(|r| (r.status, r.body_len)), Ok((503, 4)));
            assert_eq!(r[2], Err(HttpError::Closed));
        }
    }

    #[test]
    fn interim_response_is_skipped_and_missing_length_reads_to_eof() {
        let data = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 200 OK\r\n\r\nto the end";
        let resp = read_all(data, 5)[0].clone().unwrap();
        assert_eq!((resp.status, resp.close, resp.body_len), (200, true, 10));
    }

    #[test]
    fn early_eof_is_truncation() {
        assert_eq!(
            read_all(b"HTTP/1.1 200 OK\r\nContent-Le", 4)[0],
            Err(HttpError::Truncated)
        );
        assert_eq!(
            read_all(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc", 4)[0],
            Err(HttpError::Truncated)
        );
    }

    #[test]
    fn malformed_responses_are_errors() {
        for bad in [
            &b"SMTP 220 hello\r\n\r\n"[..],
            b"HTTP/1.1 20 OK\r\n\r\n",
            b"HTTP/1.1 2x0 OK\r\n\r\n",
            b"HTTP/1.1 2000 OK\r\n\r\n",
            b"HTTP/1.1 099 Low\r\n\r\n",
            b"HTTP/1.1\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n",
            b"\xff\xfe\r\n\r\n",
        ] {
            let r = read_all(bad, 3);
            assert!(
                matches!(r[0], Err(HttpError::Malformed(_))),
                "{:?} gave {:?}",
                String::from_utf8_lossy(bad),
                r[0]
            );
        }
    }

    #[test]
    fn endless_head_is_refused() {
        let junk = vec![b'a'; MAX_HEAD + READ_CHUNK + 1];
        assert!(matches!(
            read_all(&junk, READ_CHUNK)[0],
            Err(HttpError::Malformed(_))
        ));
    }
}
