//! What a connection keeps: the session it serves now, each request in its answer order, and
//! the protocol it speaks. Plain data, read and written by `HttpConnection`'s methods.

use whirl::prelude::*;
use whirl_http::Response;

use super::http2::H2Wire;
use super::record::{Requested, Served};
use crate::server::dispatcher::Dispatcher;
use crate::server::messages::FileRegion;

/// The session a connection is serving now, and its dispatcher.
#[derive(Isolated)]
pub struct Current {
    /// The cookie value that names it (for a session we just created, the token we set);
    /// `None` for the connection's own session.
    pub token: Option<String>,
    /// The cookie the client presented when the session was resolved, if it named no
    /// session (stale, forged): until the client takes the new cookie, its requests still
    /// carry that one, and must not be resolved again.
    pub presented: Option<String>,
    pub dispatcher: Addr<Dispatcher>,
    /// The token to set on the next response (a session created for this client).
    pub set_cookie: Option<String>,
    /// Its principal and user, for the access log.
    pub served: Served,
}

/// A request answered or awaiting its answer, in request order.
#[derive(Isolated)]
pub struct Pending {
    pub seq: u64,
    pub keep_alive: bool,
    pub head_only: bool,
    pub set_cookie: Option<String>,
    pub response: Option<Response>,
    /// The body of `response`, when it is a file region the socket sends.
    pub region: Option<FileRegion>,
    /// What the metrics and the access log record of the request.
    pub requested: Requested,
    pub served: Served,
}

/// Which protocol a connection speaks: said by ALPN over TLS, else by its first bytes.
pub enum Wire {
    /// Its first bytes so far, a proper prefix of HTTP/2's preface (HTTP/2 is on).
    Undecided(Vec<u8>),
    Http1,
    Http2(Box<H2Wire<Pending>>),
}

impl Wire {
    /// The HTTP/2 side, if the connection speaks HTTP/2.
    pub fn http2(&mut self) -> Option<&mut H2Wire<Pending>> {
        match self {
            Wire::Http2(wire) => Some(wire),
            _ => None,
        }
    }
}
