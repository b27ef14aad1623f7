//! HTTP/1.1 message handling without sockets: the `HttpConnection` process of the paper
//! decodes bytes into [`Request`]s and encodes [`Response`]s, and keeping that logic pure
//! lets it be tested byte by byte, away from the runtime.

mod chunked;
mod conditional;
mod date;
mod decoder;
mod error;
mod range;
mod request;
mod response;

pub use conditional::{Conditions, Selection, Validators};
pub use date::DateCache;
pub use decoder::{Limits, RequestDecoder, READ_CHUNK};
pub use error::HttpError;
pub use range::ByteRange;
pub use request::{Method, Request};
pub use response::Response;
