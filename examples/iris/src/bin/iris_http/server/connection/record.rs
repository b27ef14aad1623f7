//! What a connection reports on each answer it writes: the metrics (requests by class,
//! bytes, duration, in flight) and, with `--access-log`, a line of the access log.
//!
//! A request's facts are taken when it is received ([`Requested`]), since the request
//! itself travels on to a dispatcher; the strings the access log needs are copied only when
//! there is an access log.

use std::time::{Instant, SystemTime};

use whirl::prelude::*;
use whirl_http::{Method, Request};

use super::HttpConnection;
use crate::ops::access_log::Record;
use crate::ops::metrics::MethodClass;

/// What the metrics and the access log need of a request, taken when it was received.
#[derive(Isolated)]
pub(super) struct Requested {
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
pub(super) struct Served {
    pub(super) principal: Option<u64>,
    pub(super) user: Option<String>,
}

impl Requested {
    /// The facts of `request`, received now; the strings too if `log`.
    pub(super) fn of(request: &Request, log: bool) -> Requested {
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
    pub(super) fn none() -> Requested {
        Requested {
            method: MethodClass::Other,
            received: Instant::now(),
            logged: None,
        }
    }
}

impl HttpConnection {
    /// A request entered the connection's answer order.
    pub(super) fn count_received(&self) {
        self.site.ops.metrics.in_flight.inc();
    }

    /// The answer to `requested`, served by `served`, was written: `status`, `bytes` of it.
    pub(super) fn count_answered(
        &self,
        requested: Requested,
        served: Served,
        status: u16,
        bytes: u64,
    ) {
        let ops = &self.site.ops;
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
            remote: self.remote,
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

    /// `count` requests will not be answered (the connection closed first).
    pub(super) fn count_abandoned(&self, count: usize) {
        let count = i64::try_from(count).unwrap_or(i64::MAX);
        self.site.ops.metrics.in_flight.dec_by(count);
    }
}
