//! Incremental request decoding: bytes arrive in arbitrary chunks (a request split across
//! reads, several pipelined requests in one read) and come out as whole [`Request`]s.
//!
//! Limits are checked as early as possible so a peer cannot make the server buffer more than
//! `max_head_bytes + max_body_bytes` plus one read: an oversized head is refused as soon as
//! that many bytes arrive without its end, an oversized body as soon as its head is parsed
//! (with `Content-Length`) or as soon as a chunk would take it past the limit (chunked).
//!
//! The head is bounded line by line as it arrives: a request line longer than
//! `max_line_bytes` is refused with 414 as soon as that many bytes of it are here, a header
//! line with 431, as is a head longer than `max_head_bytes` or with more than `max_headers`
//! headers.
//!
//! The version is read before the rest (RFC 9112 §2.3): `HTTP/1.x` with a minor version
//! above 1 is served as HTTP/1.1 (the highest minor version the server implements), and any
//! major version other than 1 (`HTTP/2.0` on an HTTP/1 connection) is refused with 505.
//!
//! The head is also checked for what RFC 9112 makes the server refuse before any body: a
//! missing (HTTP/1.1) or repeated `Host` (400), `Transfer-Encoding` together with
//! `Content-Length` or in HTTP/1.0 (400: the framing would be ambiguous, the classic request
//! smuggling), a transfer coding other than `chunked` (501) and an expectation other than
//! `100-continue` (417). A head that expects `100-continue` and has a body raises
//! [`RequestDecoder::take_continue`], so the server can send the interim answer only for a
//! request it is going to read.

use std::mem::MaybeUninit;

use crate::chunked::ChunkedBody;
use crate::{HttpError, Limits, Method, Request};

/// Where the decoder is in the current request.
#[derive(Debug)]
enum State {
    /// Waiting for the end of a head.
    Head,
    /// The head is parsed; waiting for `len` body bytes.
    Body { request: Request, len: usize },
    /// The head is parsed; decoding a chunked body into `request.body`.
    Chunked { request: Request, body: ChunkedBody },
    /// A request was refused; the framing is lost, so is every later request.
    Poisoned(HttpError),
}

isolated!(enum State { Head, Body { request, len }, Chunked { request, body }, Poisoned(error) });

/// Turns a byte stream into requests. Call [`feed`](RequestDecoder::feed) with each read,
/// then [`next_request`](RequestDecoder::next_request) until it returns `Ok(None)`.
#[derive(Debug)]
pub struct RequestDecoder {
    limits: Limits,
    buf: Vec<u8>,
    /// Bytes of `buf` already consumed by returned requests (compacted on the next feed, so
    /// pipelined requests do not each move the rest of the buffer).
    pos: usize,
    /// How far the head after `pos` has been searched, so a head arriving byte by byte is
    /// scanned once rather than once per byte.
    scan: HeadScan,
    state: State,
    /// A feed was dropped because it would have exceeded `Limits::max_buffered`.
    overfed: bool,
    /// The request whose body is awaited asked for `100 Continue` and has not been told.
    continue_due: bool,
}

isolated!(struct RequestDecoder { limits, buf, pos, scan, state, overfed, continue_due });

/// Progress through a head that has not all arrived: the bytes searched for its end, where
/// the line being read starts, and how many lines ended before it (none: it is the request
/// line). Offsets are from the head's first byte.
#[derive(Debug, Default, Clone, Copy)]
struct HeadScan {
    scanned: usize,
    line_start: usize,
    lines: usize,
}

isolated!(struct HeadScan { scanned, line_start, lines });

/// How the body of a request is delimited (RFC 9112 §6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    /// `Content-Length` bytes (0 without the header).
    Length(usize),
    /// The chunked transfer coding.
    Chunked,
}

/// A parsed head, before its body.
struct Head {
    request: Request,
    framing: Framing,
    /// `Expect: 100-continue` in an HTTP/1.1 request.
    expects_continue: bool,
}

impl Default for RequestDecoder {
    fn default() -> Self {
        RequestDecoder::new(Limits::default())
    }
}

impl RequestDecoder {
    /// A decoder enforcing `limits`.
    pub fn new(limits: Limits) -> Self {
        RequestDecoder {
            limits,
            buf: Vec::new(),
            pos: 0,
            scan: HeadScan::default(),
            state: State::Head,
            overfed: false,
            continue_due: false,
        }
    }

    #[cfg(test)]
    /// Bytes currently buffered (consumed ones included until the next feed).
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Bytes of a request received but not yet returned (a head or body still arriving).
    pub fn pending(&self) -> usize {
        match self.state {
            State::Head => self.buf.len() - self.pos,
            // A parsed head waiting for its body is pending even before a body byte arrives.
            State::Body { .. } | State::Chunked { .. } => (self.buf.len() - self.pos).max(1),
            State::Poisoned(_) => 0,
        }
    }

    /// Whether a request was refused: the connection should be closed after the error
    /// response.
    pub fn is_poisoned(&self) -> bool {
        matches!(self.state, State::Poisoned(_))
    }

    /// Whether the request now awaiting its body asked for `100 Continue` (RFC 9110
    /// §10.1.1): true once per such request, and only while its body has not all arrived
    /// (a client that sent it anyway needs no invitation). The interim answer must follow
    /// the final answers to the requests before it.
    pub fn take_continue(&mut self) -> bool {
        std::mem::take(&mut self.continue_due)
    }

    /// The request whose body is still arriving, its body as far as it has been decoded:
    /// what a server looks at to decide, before inviting the body with `100 Continue`,
    /// whether it will read it at all (a request it is about to refuse gets its final
    /// answer instead, RFC 9110 §10.1.1).
    pub fn awaiting_body(&self) -> Option<&Request> {
        match &self.state {
            State::Body { request, .. } | State::Chunked { request, .. } => Some(request),
            State::Head | State::Poisoned(_) => None,
        }
    }

    /// Appends `bytes` read from the peer. If they would take the buffer past
    /// [`Limits::max_buffered`] (only possible when the caller feeds more than
    /// [`READ_CHUNK`](crate::READ_CHUNK) at once or skips draining), they are dropped and the stream ends with
    /// [`HttpError::BufferFull`] once the requests already complete are returned. Ignored
    /// once poisoned.
    pub fn feed(&mut self, bytes: &[u8]) {
        if self.is_poisoned() || self.overfed {
            return;
        }
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        if self.buf.len().saturating_add(bytes.len()) > self.limits.max_buffered() {
            self.overfed = true;
            return;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete request, `Ok(None)` if more bytes are needed, or the error to
    /// answer before closing the connection (returned again on every later call).
    pub fn next_request(&mut self) -> Result<Option<Request>, HttpError> {
        let result = self.step();
        if !matches!(result, Ok(None)) {
            // A request came out (its body is here) or the stream was refused: either way no
            // interim answer is owed any more.
            self.continue_due = false;
        }
        if let Err(error) = &result {
            self.state = State::Poisoned(error.clone());
            self.buf = Vec::new();
            self.pos = 0;
            self.scan = HeadScan::default();
        }
        result
    }

    fn step(&mut self) -> Result<Option<Request>, HttpError> {
        match &self.state {
            State::Poisoned(error) => Err(error.clone()),
            State::Head => {
                let Some(head) = self.decode_head()? else {
                    return self.need_more();
                };
                let Head {
                    request,
                    framing,
                    expects_continue,
                } = head;
                match framing {
                    Framing::Length(0) => Ok(Some(request)),
                    Framing::Length(len) => {
                        self.continue_due = expects_continue;
                        self.state = State::Body { request, len };
                        self.take_body()
                    }
                    Framing::Chunked => {
                        self.continue_due = expects_continue;
                        self.state = State::Chunked {
                            request,
                            body: ChunkedBody::default(),
                        };
                        self.take_chunked()
                    }
                }
            }
            State::Body { .. } => self.take_body(),
            State::Chunked { .. } => self.take_chunked(),
        }
    }

    fn need_more(&self) -> Result<Option<Request>, HttpError> {
        if self.overfed {
            Err(HttpError::BufferFull)
        } else {
            Ok(None)
        }
    }

    fn take_body(&mut self) -> Result<Option<Request>, HttpError> {
        let State::Body { len, .. } = self.state else {
            return self.need_more();
        };
        if self.buf.len() - self.pos < len {
            return self.need_more();
        }
        let State::Body { mut request, .. } = std::mem::replace(&mut self.state, State::Head)
        else {
            return self.need_more();
        };
        request.body = self.buf[self.pos..self.pos + len].to_vec();
        self.pos += len;
        Ok(Some(request))
    }

    /// Decodes what has arrived of a chunked body; the request once it is complete.
    fn take_chunked(&mut self) -> Result<Option<Request>, HttpError> {
        let State::Chunked { request, body } = &mut self.state else {
            return self.need_more();
        };
        let progress = body.decode(&self.buf[self.pos..], &mut request.body, &self.limits)?;
        self.pos += progress.consumed;
        if !progress.done {
            return self.need_more();
        }
        let State::Chunked { request, .. } = std::mem::replace(&mut self.state, State::Head) else {
            return self.need_more();
        };
        Ok(Some(request))
    }

    /// Parses a head if one is complete, and checks what must be refused before its body.
    fn decode_head(&mut self) -> Result<Option<Head>, HttpError> {
        self.skip_empty_lines();
        let rest = &self.buf[self.pos..];
        let Some(end) = self.scan.advance(rest, &self.limits)? else {
            return Ok(None);
        };
        let (request, consumed) = parse_head(&rest[..end], self.limits.max_headers)?;
        check_host(&request)?;
        let framing = framing(&request, self.limits.max_body_bytes)?;
        let expects_continue = expects_continue(&request)?;
        self.pos += consumed;
        self.scan = HeadScan::default();
        Ok(Some(Head {
            request,
            framing,
            expects_continue,
        }))
    }

    /// RFC 9112 §2.2: a server should ignore empty lines before a request line (some clients
    /// send a CRLF after a POST body).
    fn skip_empty_lines(&mut self) {
        loop {
            let rest = &self.buf[self.pos..];
            let skip = if rest.starts_with(b"\r\n") {
                2
            } else if rest.starts_with(b"\n") {
                1
            } else {
                return;
            };
            self.pos += skip;
            // Only a head's first bytes can be skipped, so nothing of it was scanned yet.
            self.scan = HeadScan::default();
        }
    }
}

impl HeadScan {
    /// Searches `head` (the bytes of a head from its first, more of them than last time) on
    /// from where the last search stopped: the head's length, up to and including its empty
    /// line, once that has arrived; `None` while it has not; an error as soon as a line or
    /// the whole is longer than `limits` allow (414 while in the request line, 431 after).
    /// Line ends may be CRLF or bare LF, as httparse accepts both.
    fn advance(&mut self, head: &[u8], limits: &Limits) -> Result<Option<usize>, HttpError> {
        let too_long = |lines: usize| match lines {
            0 => HttpError::UriTooLong,
            _ => HttpError::HeaderTooLarge,
        };
        while let Some(at) = head[self.scanned..].iter().position(|&b| b == b'\n') {
            let end = self.scanned + at;
            self.scanned = end + 1;
            let line = &head[self.line_start..end];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.is_empty() && self.lines > 0 {
                if self.scanned > limits.max_head_bytes {
                    return Err(HttpError::HeaderTooLarge);
                }
                return Ok(Some(self.scanned));
            }
            if line.len() > limits.max_line_bytes {
                return Err(too_long(self.lines));
            }
            self.lines += 1;
            self.line_start = self.scanned;
        }
        self.scanned = head.len();
        // The line still arriving may end in the CR of its CRLF.
        let partial = head.len() - self.line_start;
        if partial > limits.max_line_bytes.saturating_add(1) || head.len() > limits.max_head_bytes {
            return Err(too_long(self.lines));
        }
        Ok(None)
    }
}

/// RFC 9112 §2.3: the request line's version, read before httparse (which knows HTTP/1.0
/// and HTTP/1.1 alone). `HTTP/1.x` with x above 1 comes back as `HTTP/1.1` (a copy of the
/// head with that one digit changed); another major version is refused with 505. A version
/// that is not `HTTP/` digit `.` digit is left for httparse to refuse (400).
fn served_version(head: &[u8]) -> Result<std::borrow::Cow<'_, [u8]>, HttpError> {
    let line_end = head.iter().position(|&b| b == b'\n').unwrap_or(head.len());
    let line = &head[..line_end];
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let version = line.rsplit(|&b| b == b' ').next().unwrap_or_default();
    let [b'H', b'T', b'T', b'P', b'/', major, b'.', minor] = *version else {
        return Ok(std::borrow::Cow::Borrowed(head));
    };
    if !major.is_ascii_digit() || !minor.is_ascii_digit() {
        return Ok(std::borrow::Cow::Borrowed(head));
    }
    if major != b'1' {
        return Err(HttpError::VersionNotSupported(
            String::from_utf8_lossy(version).into_owned(),
        ));
    }
    if minor <= b'1' {
        return Ok(std::borrow::Cow::Borrowed(head));
    }
    // The minor digit is the request line's last byte.
    let mut served = head.to_vec();
    if let Some(digit) = served.get_mut(line.len() - 1) {
        *digit = b'1';
    }
    Ok(std::borrow::Cow::Owned(served))
}

/// Header slots parsed into without a heap allocation: `Limits::max_headers`' default fits.
const STACK_HEADERS: usize = 100;

/// Parses a complete head with httparse.
fn parse_head(head: &[u8], max_headers: usize) -> Result<(Request, usize), HttpError> {
    let head = served_version(head)?;
    let mut on_stack = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; STACK_HEADERS];
    let mut on_heap = Vec::new();
    let slots = match on_stack.get_mut(..max_headers) {
        Some(slots) => slots,
        None => {
            on_heap.resize_with(max_headers, MaybeUninit::uninit);
            &mut on_heap[..]
        }
    };
    let mut parsed = httparse::Request::new(&mut []);
    let consumed = match parsed.parse_with_uninit_headers(&head, slots) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => {
            return Err(HttpError::BadRequest("incomplete request head".into()))
        }
        Err(httparse::Error::TooManyHeaders) => return Err(HttpError::HeaderTooLarge),
        Err(e) => return Err(HttpError::BadRequest(e.to_string())),
    };
    let missing = || HttpError::BadRequest("incomplete request line".into());
    let method = Method::from_token(parsed.method.ok_or_else(missing)?);
    let target = parsed.path.ok_or_else(missing)?;
    let version = parsed.version.ok_or_else(missing)?;
    let (path, query) = match target.split_once('?') {
        Some((path, query)) => (path.to_string(), Some(query.to_string())),
        None => (target.to_string(), None),
    };
    let headers: Vec<(String, Vec<u8>)> = parsed
        .headers
        .iter()
        .map(|h| (h.name.to_string(), h.value.to_vec()))
        .collect();
    let mut request = Request {
        method,
        path,
        query,
        version,
        headers,
        body: Vec::new(),
        keep_alive: false,
    };
    request.keep_alive = keep_alive(&request);
    Ok((request, consumed))
}

/// HTTP/1.1 keeps the connection unless `Connection: close`; HTTP/1.0 closes it unless
/// `Connection: keep-alive`.
fn keep_alive(request: &Request) -> bool {
    let mut close = false;
    let mut keep = false;
    for token in request
        .header_values("connection")
        .flat_map(|v| v.split(|&b| b == b','))
        .map(|t| t.trim_ascii())
    {
        close |= token.eq_ignore_ascii_case(b"close");
        keep |= token.eq_ignore_ascii_case(b"keep-alive");
    }
    !close && (request.version >= 1 || keep)
}

/// RFC 9112 §3.2: an HTTP/1.1 request has exactly one `Host`, an HTTP/1.0 one at most one,
/// and its value is an authority (`host[:port]`, possibly empty), nothing else.
fn check_host(request: &Request) -> Result<(), HttpError> {
    let bad = |why: &str| Err(HttpError::BadRequest(why.into()));
    let mut hosts = request.header_values("host");
    match (hosts.next(), hosts.next()) {
        (None, _) if request.version >= 1 => bad("HTTP/1.1 request without Host"),
        (Some(_), Some(_)) => bad("more than one Host"),
        (Some(host), None) if !host.iter().all(|&b| is_authority_byte(b)) => {
            bad("Host is not an authority")
        }
        _ => Ok(()),
    }
}

/// The bytes of an authority without userinfo (RFC 3986 §3.2: unreserved, sub-delims,
/// percent-encodings, `:` and the brackets of an IPv6 literal).
fn is_authority_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:[]%".contains(&b)
}

/// The comma-separated tokens of every `name` header, trimmed, empty ones skipped.
fn list_tokens<'a>(request: &'a Request, name: &'a str) -> impl Iterator<Item = &'a [u8]> + 'a {
    request
        .header_values(name)
        .flat_map(|v| v.split(|&b| b == b','))
        .map(<[u8]>::trim_ascii)
        .filter(|t| !t.is_empty())
}

/// How the body is delimited (RFC 9112 §6.1, §6.3). With `Transfer-Encoding`: `chunked`
/// alone, since any other coding is one the server cannot decode (501) and `chunked` twice or
/// not last leaves the length unknown (400); with `Content-Length` too, or in HTTP/1.0, the
/// framing is ambiguous (400). Without it: several `Content-Length` headers must agree, a
/// value is digits only (no sign, no list), and no header means no body.
fn framing(request: &Request, max_body: usize) -> Result<Framing, HttpError> {
    let bad = |why: &str| Err(HttpError::BadRequest(why.into()));
    if request.header("transfer-encoding").is_some() {
        if request.header("content-length").is_some() {
            return bad("both Transfer-Encoding and Content-Length");
        }
        if request.version == 0 {
            return bad("Transfer-Encoding in an HTTP/1.0 request");
        }
        let codings: Vec<&[u8]> = list_tokens(request, "transfer-encoding").collect();
        if let Some(unknown) = codings.iter().find(|c| !c.eq_ignore_ascii_case(b"chunked")) {
            return Err(HttpError::NotImplemented(format!(
                "transfer coding {:?}",
                String::from_utf8_lossy(unknown)
            )));
        }
        return match codings.len() {
            1 => Ok(Framing::Chunked),
            0 => bad("empty Transfer-Encoding"),
            _ => bad("chunked applied more than once"),
        };
    }
    let mut length: Option<u64> = None;
    for value in request.header_values("content-length") {
        let n = parse_length(value.trim_ascii())?;
        if length.is_some_and(|previous| previous != n) {
            return Err(HttpError::BadRequest("conflicting Content-Length".into()));
        }
        length = Some(n);
    }
    let length = length.unwrap_or(0);
    match usize::try_from(length) {
        Ok(n) if n <= max_body => Ok(Framing::Length(n)),
        _ => Err(HttpError::PayloadTooLarge),
    }
}

/// Whether the request expects `100 Continue`. RFC 9110 §10.1.1: an HTTP/1.0 request's
/// expectations are ignored; any expectation other than `100-continue` may be refused with
/// 417, and is, since the server meets none.
fn expects_continue(request: &Request) -> Result<bool, HttpError> {
    if request.version == 0 {
        return Ok(false);
    }
    let mut continue_ = false;
    for token in list_tokens(request, "expect") {
        if !token.eq_ignore_ascii_case(b"100-continue") {
            return Err(HttpError::ExpectationFailed(
                String::from_utf8_lossy(token).into_owned(),
            ));
        }
        continue_ = true;
    }
    Ok(continue_)
}

/// A `Content-Length` value: one or more ASCII digits, without overflowing `u64`.
fn parse_length(value: &[u8]) -> Result<u64, HttpError> {
    let bad = |why: &str| HttpError::BadRequest(format!("Content-Length {why}"));
    if value.is_empty() {
        return Err(bad("is empty"));
    }
    value.iter().try_fold(0u64, |n, &b| {
        if !b.is_ascii_digit() {
            return Err(bad("is not a number"));
        }
        n.checked_mul(10)
            .and_then(|n| n.checked_add(u64::from(b - b'0')))
            .ok_or_else(|| bad("overflows"))
    })
}

#[cfg(test)]
mod tests;
