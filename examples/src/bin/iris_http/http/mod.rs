//! HTTP/1.1 message handling without sockets: the `HttpConnection` process of the paper
//! decodes bytes into [`Request`]s and encodes [`Response`]s, and keeping that logic pure
//! lets it be tested byte by byte, away from the runtime.

mod decoder;
mod error;
mod request;
mod response;

pub use decoder::{Limits, RequestDecoder, READ_CHUNK};
pub use error::HttpError;
pub use request::{Method, Request};
pub use response::Response;
