//! Why a request stream was rejected, and which status the peer gets for it.

use thiserror::Error;

/// A request the decoder refuses. Every variant ends the connection: once framing is in
/// doubt the decoder cannot find the next request reliably, so it is poisoned.
///
/// More reasons may be added, hence `#[non_exhaustive]`; [`status`](HttpError::status) maps
/// every one to its answer.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum HttpError {
    /// Malformed request line, headers or chunked body, an unusable `Content-Length`, a
    /// missing or repeated `Host`, or ambiguous framing (`Transfer-Encoding` with
    /// `Content-Length`).
    #[error("bad request: {0}")]
    BadRequest(String),
    /// The head is longer than `Limits::max_head_bytes`, a header line longer than
    /// `Limits::max_line_bytes`, or there are more than `Limits::max_headers` headers.
    #[error("request head too large")]
    HeaderTooLarge,
    /// The request line is longer than `Limits::max_line_bytes` (or, before its end,
    /// than `Limits::max_head_bytes`): the target is too long (RFC 9110 §15.5.15).
    #[error("request target too long")]
    UriTooLong,
    /// A major version other than 1 (`HTTP/2.0` sent to an HTTP/1 connection, `HTTP/0.9`,
    /// `HTTP/3.0`): RFC 9110 §15.6.6. A later minor version of HTTP/1 is not this error:
    /// it is served as HTTP/1.1 (RFC 9112 §2.3).
    #[error("HTTP version not supported: {0}")]
    VersionNotSupported(String),
    /// The announced body (or the sum of its chunks so far) is longer than
    /// `Limits::max_body_bytes`.
    #[error("request body too large")]
    PayloadTooLarge,
    /// The caller fed more bytes than the decoder buffers without draining the requests
    /// already complete; answered like an oversized payload (the peer sent too much at once).
    #[error("too many bytes buffered")]
    BufferFull,
    /// A feature the server does not implement: a transfer coding other than `chunked`.
    /// RFC 9112 says a server that does not understand a transfer coding answers 501, and
    /// guessing the body's length instead would open the door to request smuggling.
    #[error("not implemented: {0}")]
    NotImplemented(String),
    /// An `Expect` other than `100-continue` (RFC 9110 §10.1.1). Refused before the body,
    /// which may or may not follow, so the connection cannot go on either.
    #[error("expectation failed: {0}")]
    ExpectationFailed(String),
    /// The rest of a request did not arrive in time (raised by the connection, not the
    /// decoder: it is how slow clients are let go).
    #[error("the request did not arrive in time")]
    Timeout,
}

isolated!(
    enum HttpError {
        BadRequest(why),
        HeaderTooLarge,
        UriTooLong,
        VersionNotSupported(version),
        PayloadTooLarge,
        BufferFull,
        NotImplemented(what),
        ExpectationFailed(what),
        Timeout,
    }
);

impl HttpError {
    /// The status code to answer with before closing the connection.
    pub fn status(&self) -> u16 {
        match self {
            HttpError::BadRequest(_) => 400,
            HttpError::HeaderTooLarge => 431,
            HttpError::UriTooLong => 414,
            HttpError::VersionNotSupported(_) => 505,
            HttpError::PayloadTooLarge | HttpError::BufferFull => 413,
            HttpError::NotImplemented(_) => 501,
            HttpError::ExpectationFailed(_) => 417,
            HttpError::Timeout => 408,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses() {
        assert_eq!(HttpError::BadRequest("x".into()).status(), 400);
        assert_eq!(HttpError::HeaderTooLarge.status(), 431);
        assert_eq!(HttpError::UriTooLong.status(), 414);
        assert_eq!(
            HttpError::VersionNotSupported("HTTP/2.0".into()).status(),
            505
        );
        assert_eq!(HttpError::PayloadTooLarge.status(), 413);
        assert_eq!(HttpError::BufferFull.status(), 413);
        assert_eq!(HttpError::NotImplemented("x".into()).status(), 501);
        assert_eq!(HttpError::ExpectationFailed("x".into()).status(), 417);
        assert_eq!(HttpError::Timeout.status(), 408);
    }
}
