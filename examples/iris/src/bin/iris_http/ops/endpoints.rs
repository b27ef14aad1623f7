//! `/healthz`, `/readyz` and `/metrics`: what load balancers, orchestrators and Prometheus
//! ask a server.
//!
//! The connection answers them itself, before a session is looked up and without going
//! through any group's admission predicate: a probe must be answered while the server sheds
//! load (that is when it matters), it starts no session and sets no cookie, and it costs no
//! process. `GET` and `HEAD` only (anything else is 405); the query is ignored; never
//! cached.
//!
//! * `/healthz`: 200 `ok` while the process serves (a liveness probe).
//! * `/readyz`: 200 `ready`, then 503 `draining` from the moment a drain begins (a readiness
//!   probe: the load balancer stops sending new requests while the open connections finish).
//! * `/metrics`: the registry (see `ops::metrics`) in OpenMetrics text for a scraper that
//!   accepts it (Prometheus does), else in the classic Prometheus text format 0.0.4
//!   (`promtool`, `curl`): `whirl::prometheus::Format::negotiate` decides from `Accept`.

use whirl_http::{Method, Request, Response};

use whirl::prometheus::{self, Format};

use super::Ops;

/// One of the endpoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endpoint {
    Health,
    Ready,
    Metrics,
}

/// The endpoint `request` asks for, if any: its path is exactly one of them (origin form).
pub fn endpoint(request: &Request) -> Option<Endpoint> {
    match request.path.as_str() {
        "/healthz" => Some(Endpoint::Health),
        "/readyz" => Some(Endpoint::Ready),
        "/metrics" => Some(Endpoint::Metrics),
        _ => None,
    }
}

/// The answer to `request` for `endpoint`.
pub fn answer(endpoint: Endpoint, request: &Request, ops: &Ops) -> Response {
    if !matches!(request.method, Method::Get | Method::Head) {
        return Response::error(405).with_header("Allow", "GET, HEAD");
    }
    let text = "text/plain; charset=utf-8";
    let response = match endpoint {
        Endpoint::Health => Response::ok(text, "ok\n"),
        Endpoint::Ready if ops.ready() => Response::ok(text, "ready\n"),
        Endpoint::Ready => Response {
            body: b"draining\n".to_vec(),
            ..Response::new(503)
        }
        .with_header("Content-Type", text),
        Endpoint::Metrics => {
            let accept = request.header("accept").map(String::from_utf8_lossy);
            let format = Format::negotiate(accept.as_deref());
            match prometheus::encode(&ops.registry, format) {
                Ok(text) => Response::ok(format.content_type(), text),
                Err(_) => Response::error(500),
            }
        }
    };
    response.with_header("Cache-Control", "no-store")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::Phase;

    fn request(method: &str, path: &str) -> Request {
        let mut decoder = whirl_http::RequestDecoder::new(whirl_http::Limits::default());
        decoder.feed(format!("{method} {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes());
        match decoder.next_request() {
            Ok(Some(request)) => request,
            other => panic!("no request: {other:?}"),
        }
    }

    #[test]
    fn readiness_follows_the_phase_and_health_does_not() {
        let rt = whirl::Runtime::new();
        let ops = Ops::new(&rt, None);
        let status = |endpoint| answer(endpoint, &request("GET", "/x"), &ops).status;
        assert_eq!(status(Endpoint::Ready), 200);
        ops.advance(Phase::Draining);
        assert_eq!(status(Endpoint::Ready), 503);
        assert_eq!(status(Endpoint::Health), 200);
        ops.advance(Phase::Serving);
        assert_eq!(ops.phase(), Phase::Draining, "a phase never goes back");
        let post = request("POST", "/metrics");
        assert_eq!(endpoint(&post), Some(Endpoint::Metrics));
        assert_eq!(answer(Endpoint::Metrics, &post, &ops).status, 405);
        assert_eq!(endpoint(&request("GET", "/healthz/x")), None);
        rt.shutdown_timeout(std::time::Duration::from_secs(1));
    }
}
