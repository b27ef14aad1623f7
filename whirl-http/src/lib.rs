//! HTTP/1.1 messages for whirl servers, without sockets: bytes in, [`Request`]s out;
//! [`Response`]s in, bytes out.
//!
//! The crate is the protocol half of an HTTP server. It never touches a socket, a thread or
//! a clock it is not handed, so the process that owns a connection feeds it what it reads
//! and writes what it returns, and every rule of the protocol can be tested byte by byte,
//! away from the runtime. whirl's example server `iris_http` is built on it.
//!
//! - [`RequestDecoder`] turns a byte stream, split across reads or pipelined, into requests.
//!   It buffers at most [`Limits::max_buffered`] bytes, decodes `Content-Length` and chunked
//!   bodies, and refuses (with an [`HttpError`] that names the status to answer) what
//!   RFC 9112 makes a server refuse: ambiguous framing, a missing or repeated `Host`, unknown
//!   transfer codings and expectations, a request line (414) or head (431) over its
//!   [`Limits`], a major version other than 1 (505; `HTTP/1.2` is served as HTTP/1.1).
//! - [`Request`] is one decoded request: [`Method`], target, headers, body, and whether the
//!   connection stays open after it.
//! - [`Response`] is a status, headers and a body; [`Response::encode`] writes it with
//!   `Date`, `Content-Length` and `Connection`, and [`DateCache`] formats the `Date` once a
//!   second.
//! - [`Conditions`], [`Validators`], [`Selection`] and [`ByteRange`] decide what a GET or
//!   HEAD of a file gets: the whole file, one byte range (206), 304, 412 or 416, without reading
//!   the file first.
//!
//! Not here: TLS, HTTP/2, streamed or chunked responses (bodies are in memory and sent
//! with a `Content-Length`), and multipart ranges (a request for several ranges gets the
//! whole file, as RFC 9110 allows).
//!
//! # Example
//!
//! Decoding a request that arrives in two reads, and encoding the answer:
//!
//! ```
//! use whirl_http::{DateCache, HttpError, Method, RequestDecoder, Response};
//!
//! let mut decoder = RequestDecoder::default();
//! decoder.feed(b"GET /hello?name=whirl HTTP/1.1\r\nHost: exa");
//! assert_eq!(decoder.next_request()?, None); // the head has not all arrived
//! decoder.feed(b"mple.com\r\n\r\n");
//! let request = decoder.next_request()?.expect("a whole request");
//! assert_eq!(request.method, Method::Get);
//! assert_eq!(request.path, "/hello");
//! assert_eq!(request.query.as_deref(), Some("name=whirl"));
//! assert_eq!(request.header("HOST"), Some(&b"example.com"[..]));
//! assert!(request.keep_alive);
//!
//! let mut dates = DateCache::default();
//! let response = Response::ok("text/plain; charset=utf-8", "hello, whirl\n");
//! let head_only = request.method == Method::Head;
//! let bytes = response.encode(dates.now(), request.keep_alive, head_only);
//! let text = String::from_utf8(bytes)?;
//! assert!(text.starts_with("HTTP/1.1 200 OK\r\nServer: whirl-iris\r\nDate: "));
//! assert!(text.contains("\r\nContent-Length: 13\r\nConnection: keep-alive\r\n"));
//! assert!(text.ends_with("\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nhello, whirl\n"));
//!
//! // A stream the decoder refuses: answer with the error's status, then close.
//! let mut decoder = RequestDecoder::default();
//! decoder.feed(b"GET / HTTP/1.1\r\n\r\n");
//! let error = decoder.next_request().expect_err("HTTP/1.1 needs a Host");
//! assert!(matches!(error, HttpError::BadRequest(_)));
//! let refusal = Response::from_http_error(&error);
//! assert_eq!(refusal.status, 400);
//! assert!(refusal.closes_connection(true));
//! assert!(decoder.is_poisoned());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A connection loop feeds each read (at most [`READ_CHUNK`] bytes), then calls
//! [`RequestDecoder::next_request`] until it returns `Ok(None)`; after an `Err` it sends
//! [`Response::from_http_error`] and closes, since the decoder can no longer find where the
//! next request starts. [`RequestDecoder::take_continue`] says when a request that sent
//! `Expect: 100-continue` is owed its interim answer.
//!
//! # Features
//!
//! - `isolated`: implements `whirl::Isolated` for every public type, so that requests,
//!   responses, a connection's decoder and its [`DateCache`] can be sent in messages and held
//!   in process state. It depends on `whirl-runtime` for the trait alone; off by default,
//!   and without it the crate depends on no part of whirl.

/// `unsafe impl Isolated` for a type of this crate, checked as `#[derive(whirl::Isolated)]`
/// checks it: every field must be `Isolated`, or the crate does not compile.
///
/// The derive cannot be used here: it names the `whirl` crate, and whirl depends on this one
/// (its console serves HTTP with it). So the impl is on the trait's definition in
/// whirl-runtime (which `whirl::Isolated` re-exports), and the fields are listed at the call:
/// a struct's are destructured without `..` and an enum's variants matched without `_`, so
/// a field or variant added to the type but not here fails to compile rather than escapes
/// the check.
#[cfg(feature = "isolated")]
macro_rules! isolated {
    (struct $ty:ident { $($field:ident),* $(,)? }) => {
        // SAFETY: every field is `Isolated` (asserted below), and the type adds no interior
        // mutability or shared pointer of its own.
        unsafe impl whirl_runtime::Isolated for $ty {}
        const _: fn(&$ty) = |value| {
            let $ty { $($field),* } = value;
            $($crate::assert_isolated($field);)*
        };
    };
    (enum $ty:ident {
        $($variant:ident $(($($tuple:ident),*))? $({ $($named:ident),* })?),* $(,)?
    }) => {
        // SAFETY: every variant's fields are `Isolated` (asserted below), and the type adds
        // no interior mutability or shared pointer of its own.
        unsafe impl whirl_runtime::Isolated for $ty {}
        const _: fn(&$ty) = |value| match value {
            $(
                $ty::$variant $(($($tuple),*))? $({ $($named),* })? => {
                    $($($crate::assert_isolated($tuple);)*)?
                    $($($crate::assert_isolated($named);)*)?
                }
            )*
        };
    };
}

/// Without the `isolated` feature the field lists are not checked: nothing implements the
/// trait.
#[cfg(not(feature = "isolated"))]
macro_rules! isolated {
    ($($any:tt)*) => {};
}

/// Compiles only for an `Isolated` `T`: the per-field check of `isolated!`.
#[cfg(feature = "isolated")]
fn assert_isolated<T: whirl_runtime::Isolated>(_: &T) {}

mod chunked;
mod conditional;
mod date;
mod decoder;
mod error;
mod limits;
mod range;
mod request;
mod response;

pub use conditional::{Conditions, Selection, Validators};
pub use date::DateCache;
pub use decoder::RequestDecoder;
pub use error::HttpError;
pub use limits::{Limits, READ_CHUNK};
pub use range::ByteRange;
pub use request::{Method, Request};
pub use response::{Response, SERVER};
