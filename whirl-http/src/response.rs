//! Responses and their wire encoding.
//!
//! Every response carries `Date` and, but for those that cannot have a body (304, and 1xx
//! and 204, which are not meant as final answers here), `Content-Length` (no chunked
//! encoding), so the connection can be kept alive after any of them; `Connection` says
//! whether it will be.

use std::borrow::Cow;
use std::fmt::Write as _;

use crate::HttpError;

/// The server's name in the `Server` header of every response (also for encoders of other
/// framings, such as HTTP/2's).
pub const SERVER: &str = "whirl-iris";

/// A response: status, extra headers and body. `Content-Length`, `Connection`, `Date` and
/// `Server` (`whirl-iris`) are written by [`encode`](Response::encode), not stored here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// Extra headers, in order: names and values borrowed when they are constants (most
    /// are), so that a response allocates for what it computed only.
    pub headers: Vec<(Cow<'static, str>, Cow<'static, str>)>,
    /// The body (not sent for `HEAD`).
    pub body: Vec<u8>,
    /// Whether the connection must close after this response whatever the request asked
    /// (overload and framing errors).
    pub close: bool,
}

isolated!(struct Response { status, headers, body, close });

/// Headers a response has room for before its list grows.
const HEADERS_CAPACITY: usize = 6;

impl Response {
    /// A response with `status`, no headers and no body.
    pub fn new(status: u16) -> Self {
        Response {
            status,
            // Room for a file's headers (type, validators, ranges...) without regrowing.
            headers: Vec::with_capacity(HEADERS_CAPACITY),
            body: Vec::new(),
            close: false,
        }
    }

    /// 200 with `body` of type `content_type`.
    pub fn ok(content_type: impl Into<Cow<'static, str>>, body: impl Into<Vec<u8>>) -> Self {
        Response {
            body: body.into(),
            ..Response::new(200)
        }
        .with_header("Content-Type", content_type)
    }

    /// 404 with a short text body.
    pub fn not_found() -> Self {
        Response::error(404)
    }

    /// `status` with a one-line text body naming it, e.g. `404 Not Found`.
    pub fn error(status: u16) -> Self {
        let body = format!("{status} {}\n", reason_phrase(status));
        Response {
            body: body.into_bytes(),
            ..Response::new(status)
        }
        .with_header("Content-Type", "text/plain; charset=utf-8")
    }

    /// The answer to a refused request; it closes the connection because the decoder can no
    /// longer find the next request.
    pub fn from_http_error(error: &HttpError) -> Self {
        Response {
            close: true,
            ..Response::error(error.status())
        }
    }

    /// 503 with `Retry-After`, closing the connection: the answer to a request that admission
    /// control sheds, so the client backs off rather than pipelining more work into an
    /// overloaded server.
    pub fn service_unavailable(retry_after_secs: u32) -> Self {
        Response {
            close: true,
            ..Response::error(503)
        }
        .with_header("Retry-After", retry_after_secs.to_string())
    }

    /// This response with one more header: a `&'static str` is kept as it is, a `String`
    /// moved in (pass `s.to_owned()` for a borrowed one). CR, LF and NUL are removed from the
    /// name and value so a value derived from the request cannot inject headers.
    pub fn with_header(
        mut self,
        name: impl Into<Cow<'static, str>>,
        value: impl Into<Cow<'static, str>>,
    ) -> Self {
        let forbidden = |c: char| matches!(c, '\r' | '\n' | '\0');
        let clean = |s: Cow<'static, str>| match s.contains(forbidden) {
            false => s,
            true => Cow::Owned(s.chars().filter(|&c| !forbidden(c)).collect()),
        };
        self.headers.push((clean(name.into()), clean(value.into())));
        self
    }

    /// This response setting cookie `name=value` for the whole site, hidden from scripts.
    /// Characters a cookie value may not hold (RFC 6265: controls, space, `"`, `,`, `;`,
    /// `\`) are dropped.
    pub fn with_cookie(self, name: &str, value: &str) -> Self {
        let cookie_safe = |s: &str| -> String {
            s.chars()
                .filter(|&c| c.is_ascii_graphic() && !matches!(c, '"' | ',' | ';' | '\\' | '='))
                .collect()
        };
        let cookie = format!(
            "{}={}; Path=/; HttpOnly; SameSite=Lax",
            cookie_safe(name),
            cookie_safe(value)
        );
        self.with_header("Set-Cookie", cookie)
    }

    /// This response, closing the connection after it.
    pub fn closing(mut self) -> Self {
        self.close = true;
        self
    }

    /// Whether the connection closes after this response, given the request's wish.
    pub fn closes_connection(&self, keep_alive: bool) -> bool {
        self.close || !keep_alive
    }

    /// Whether the status forbids a body (RFC 9110 §6.4.1): then neither the body nor a
    /// `Content-Length` is sent (a 304's length would have to be the full file's, §8.6).
    pub fn is_bodiless(&self) -> bool {
        matches!(self.status, 100..=199 | 204 | 304)
    }

    /// The bytes to send. `date` is the `Date` value (see [`DateCache`](crate::DateCache));
    /// `keep_alive` is the request's wish (overridden by [`close`](Response::close));
    /// `head_only` omits the body but keeps its `Content-Length`, as `HEAD` requires.
    pub fn encode(&self, date: &str, keep_alive: bool, head_only: bool) -> Vec<u8> {
        let bodiless = self.is_bodiless();
        let mut out = self.head(date, keep_alive, self.body.len() as u64, self.body.len());
        if !head_only && !bodiless {
            out.extend_from_slice(&self.body);
        }
        out
    }

    /// The status line and headers alone, declaring a body of `content_length` bytes that
    /// the caller sends after them from elsewhere (a file region sent by `sendfile`, say);
    /// [`body`](Response::body) is ignored. A status that forbids a body gets no
    /// `Content-Length`, as in [`encode`](Response::encode).
    pub fn encode_head(&self, date: &str, keep_alive: bool, content_length: u64) -> Vec<u8> {
        self.head(date, keep_alive, content_length, 0)
    }

    /// The head, with room for `extra` more bytes.
    fn head(&self, date: &str, keep_alive: bool, content_length: u64, extra: usize) -> Vec<u8> {
        let mut head = String::with_capacity(160 + self.headers.len() * 48 + extra);
        let connection = if self.closes_connection(keep_alive) {
            "close"
        } else {
            "keep-alive"
        };
        let bodiless = self.is_bodiless();
        // Writing to a String cannot fail.
        let _ = write!(
            head,
            "HTTP/1.1 {} {}\r\nServer: {SERVER}\r\nDate: {date}\r\n",
            self.status,
            reason_phrase(self.status),
        );
        if !bodiless {
            let _ = write!(head, "Content-Length: {content_length}\r\n");
        }
        let _ = write!(head, "Connection: {connection}\r\n");
        for (name, value) in &self.headers {
            let _ = write!(head, "{name}: {value}\r\n");
        }
        head.push_str("\r\n");
        head.into_bytes()
    }
}

/// The reason phrase for the codes whirl's servers send (`Unknown` for any other).
pub(crate) fn reason_phrase(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        206 => "Partial Content",
        301 => "Moved Permanently",
        304 => "Not Modified",
        400 => "Bad Request",
        408 => "Request Timeout",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Content Too Large",
        414 => "URI Too Long",
        416 => "Range Not Satisfiable",
        417 => "Expectation Failed",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ => "Unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DATE: &str = "Sun, 06 Nov 1994 08:49:37 GMT";

    fn text(bytes: &[u8]) -> String {
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    #[test]
    fn encodes_ok_with_keep_alive() {
        let r = Response::ok("text/plain", "hi");
        assert_eq!(
            text(&r.encode(DATE, true, false)),
            "HTTP/1.1 200 OK\r\nServer: whirl-iris\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n\
             Content-Length: 2\r\nConnection: keep-alive\r\nContent-Type: text/plain\r\n\r\nhi"
        );
    }

    #[test]
    fn not_modified_has_neither_body_nor_length() {
        let r = Response {
            body: b"ignored".to_vec(),
            ..Response::new(304)
        }
        .with_header("ETag", "\"x\"");
        assert_eq!(
            text(&r.encode(DATE, true, false)),
            "HTTP/1.1 304 Not Modified\r\nServer: whirl-iris\r\n\
             Date: Sun, 06 Nov 1994 08:49:37 GMT\r\nConnection: keep-alive\r\nETag: \"x\"\r\n\r\n"
        );
    }

    #[test]
    fn head_only_keeps_the_length_and_drops_the_body() {
        let r = Response::ok("text/plain", "hello");
        let out = text(&r.encode(DATE, false, true));
        assert!(out.contains("Content-Length: 5\r\n"));
        assert!(out.contains("Connection: close\r\n"));
        assert!(out.ends_with("\r\n\r\n"));
    }

    #[test]
    fn errors_name_their_reason() {
        let r = Response::not_found();
        assert_eq!(r.status, 404);
        assert_eq!(r.body, b"404 Not Found\n");
        let out = text(&Response::error(405).encode(DATE, true, false));
        assert!(out.starts_with("HTTP/1.1 405 Method Not Allowed\r\n"));
        assert!(out.ends_with("405 Method Not Allowed\n"));
    }

    #[test]
    fn service_unavailable_closes_and_sets_retry_after() {
        let r = Response::service_unavailable(7);
        assert!(r.closes_connection(true));
        let out = text(&r.encode(DATE, true, false));
        assert!(out.starts_with("HTTP/1.1 503 Service Unavailable\r\n"));
        assert!(out.contains("Retry-After: 7\r\n"));
        assert!(out.contains("Connection: close\r\n"));
    }

    #[test]
    fn decoder_errors_close_the_connection() {
        let r = Response::from_http_error(&HttpError::HeaderTooLarge);
        assert_eq!(r.status, 431);
        assert!(r.closes_connection(true));
    }

    #[test]
    fn cookies_and_headers_cannot_inject() {
        let r = Response::ok("text/plain", "")
            .with_header("X-A", "v\r\nSet-Cookie: evil=1")
            .with_cookie("session", "ab; Domain=evil\r\n");
        let out = text(&r.encode(DATE, true, false));
        assert!(out.contains("X-A: vSet-Cookie: evil=1\r\n"));
        assert!(
            out.contains("Set-Cookie: session=abDomainevil; Path=/; HttpOnly; SameSite=Lax\r\n")
        );
        // Eight header lines (status line included) and the empty line: nothing injected.
        assert_eq!(out.matches("\r\n").count(), 9);
    }

    #[test]
    fn reason_phrases() {
        for (code, phrase) in [
            (100, "Continue"),
            (200, "OK"),
            (206, "Partial Content"),
            (301, "Moved Permanently"),
            (304, "Not Modified"),
            (400, "Bad Request"),
            (401, "Unauthorized"),
            (411, "Length Required"),
            (412, "Precondition Failed"),
            (413, "Content Too Large"),
            (414, "URI Too Long"),
            (416, "Range Not Satisfiable"),
            (417, "Expectation Failed"),
            (431, "Request Header Fields Too Large"),
            (500, "Internal Server Error"),
            (501, "Not Implemented"),
            (505, "HTTP Version Not Supported"),
            (999, "Unknown"),
        ] {
            assert_eq!(reason_phrase(code), phrase);
        }
    }
}
