//! What a connection reports on each answer it writes: the metrics (requests by class,
//! bytes, duration, in flight) and, with `--access-log`, a line of the access log.
//!
//! A request's facts are taken when it is received ([`Requested`]), since the request
//! itself travels on to a dispatcher; the strings the access log needs are copied only when
//! there is an access log.

use std::net::SocketAddr;
use std::time::{Instant, SystemTime};

use whirl::prelude::*;
use whirl_http::{Method, Request};

use crate::ops::access_log::Record;
use crate::ops::metrics::MethodClass;
use crate::ops::Ops;

/// What the metrics and the access log need of a request, taken when it was received.
#[derive(Isolated)]
pub struct Requested {
    method: MethodClass,
    received: Instant,
    /// For the access log only (`None` without one, and for an answer to no request).
    logged: Option<Logged>,
}

/// The request's strings, for the access log.
#[derive(Isolated)]
struct Logged {
    method: String,
    path: String,
    query: Option<String>,
    user_agent: Option<String>,
}

/// Who served a request: the session's principal and user name.
#[derive(Isolated, Clone, Default)]
pub struct Served {
    pub principal: Option<u64>,
    pub user: Option<String>,
}

impl Requested {
    /// The facts of `request`, received now; the strings too if `log`.
    pub fn of(request: &Request, log: bool) -> Requested {
        let logged = log.then(|| Logged {
            method: match &request.method {
                Method::Get => "GET".to_owned(),
                Method::Head => "HEAD".to_owned(),
                Method::Post => "POST".to_owned(),
                Method::Other(name) => name.clone(),
                _ => "?".to_owned(),
            },
            path: request.path.clone(),
            query: request.query.clone(),
            user_agent: request
                .header("user-agent")
                .map(|ua| String::from_utf8_lossy(ua).into_owned()),
        });
        Requested {
            method: MethodClass::of(&request.method),
            received: Instant::now(),
            logged,
        }
    }

    /// An answer to bytes that were no request (malformed, too large, too slow), or to no
    /// request at all.
    pub fn none() -> Requested {
        Requested {
            method: MethodClass::Other,
            received: Instant::now(),
            logged: None,
        }
    }
}

/// A request entered a connection's answer order.
pub fn received(ops: &Ops) {
    ops.metrics.in_flight.inc();
}

/// The answer to `requested`, from `remote`, served by `served`, was written: `status`,
/// `bytes` of it.
pub fn answered(
    ops: &Ops,
    remote: SocketAddr,
    (requested, served): (Requested, Served),
    status: u16,
    bytes: u64,
) {
    let took = requested.received.elapsed();
    ops.metrics.in_flight.dec();
    ops.metrics.answered(requested.method, status, bytes, took);
    let Some(sink) = &ops.access_log else {
        return;
    };
    let (method, path, query, user_agent) = match requested.logged {
        Some(l) => (Some(l.method), Some(l.path), l.query, l.user_agent),
        None => (None, None, None, None),
    };
    sink.log(Record {
        time: SystemTime::now(),
        remote,
        method,
        path,
        query,
        status,
        bytes,
        duration: took,
        principal: served.principal,
        user: served.user,
        user_agent,
    });
}

/// `count` requests of a connection will not be answered (it closed first).
pub fn abandoned(ops: &Ops, count: usize) {
    let count = i64::try_from(count).unwrap_or(i64::MAX);
    ops.metrics.in_flight.dec_by(count);
}
