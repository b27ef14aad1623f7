//! Session classes, the counters each session keeps, and Jain's fairness index.

use hdrhistogram::Histogram;

use crate::response::{HttpError, Response};

/// The kind of session, which decides its cookie and so its role on the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// Logged in with the admin credentials.
    Admin,
    /// Logged in with the user credentials.
    User,
    /// Never logs in.
    Anonymous,
    /// Meant to be admin or user, but the login was refused (or never got through); runs
    /// without a cookie and is kept apart so it does not blur either side's numbers.
    LoginFailed,
}

impl Class {
    /// In report order.
    pub const ALL: [Class; 4] = [
        Class::Admin,
        Class::User,
        Class::Anonymous,
        Class::LoginFailed,
    ];

    /// Name in the table and the JSON.
    pub fn name(self) -> &'static str {
        match self {
            Class::Admin => "admin",
            Class::User => "user",
            Class::Anonymous => "anonymous",
            Class::LoginFailed => "login_failed",
        }
    }

    /// Position in [`Class::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// Per-session (and, summed, per-class) outcome counts over the measured window.
/// `requests` always equals the sum of the outcome fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Requests finished (with a response or an error) inside the window.
    pub requests: u64,
    /// Responses with status 200.
    pub ok: u64,
    /// Responses with status 503: the server shedding load.
    pub unavailable: u64,
    /// Responses with any other status.
    pub other: u64,
    /// Connect failures, resets, and connections ending mid-response.
    pub conn_errors: u64,
    /// Connect, read or write timeouts.
    pub timeouts: u64,
    /// Responses this tool could not parse.
    pub malformed: u64,
    /// Connections opened by requests in the window.
    pub connects: u64,
}

impl Counts {
    /// Counts one finished request.
    pub fn record(&mut self, result: &Result<Response, HttpError>) {
        self.requests += 1;
        match result {
            Ok(r) if r.status == 200 => self.ok += 1,
            Ok(r) if r.status == 503 => self.unavailable += 1,
            Ok(_) => self.other += 1,
            Err(HttpError::Timeout) => self.timeouts += 1,
            Err(HttpError::Malformed(_)) => self.malformed += 1,
            Err(HttpError::Closed | HttpError::Truncated | HttpError::Io(_)) => {
                self.conn_errors += 1
            }
        }
    }

    /// Adds another session's counts.
    pub fn add(&mut self, o: &Counts) {
        self.requests += o.requests;
        self.ok += o.ok;
        self.unavailable += o.unavailable;
        self.other += o.other;
        self.conn_errors += o.conn_errors;
        self.timeouts += o.timeouts;
        self.malformed += o.malformed;
        self.connects += o.connects;
    }

    /// Requests that got a response of any status.
    pub fn responses(&self) -> u64 {
        self.ok + self.unavailable + self.other
    }

    /// Requests that got no usable response.
    pub fn errors(&self) -> u64 {
        self.conn_errors + self.timeouts + self.malformed
    }
}

/// Latencies in microseconds from 1 µs to an hour at 3 significant digits; one per class, not
/// per session, because thousands of sessions times ~350 KiB would not fit.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("constant histogram bounds are valid")
}

/// Jain's fairness index `(Σx)² / (n·Σx²)`: 1 when all are equal, `1/n` when one gets all.
/// `None` when there is nothing to compare (no sessions, or nobody completed anything).
pub fn jain(xs: &[u64]) -> Option<f64> {
    let sum: f64 = xs.iter().map(|&x| x as f64).sum();
    let sum_sq: f64 = xs.iter().map(|&x| (x as f64) * (x as f64)).sum();
    if xs.is_empty() || sum_sq == 0.0 {
        return None;
    }
    Some(sum * sum / (xs.len() as f64 * sum_sq))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_equal_is_one() {
        assert_eq!(jain(&[7, 7, 7, 7]), Some(1.0));
        assert_eq!(jain(&[3]), Some(1.0));
    }

    #[test]
    fn jain_one_client_doing_all_is_one_over_n() {
        let j = jain(&[0, 0, 12, 0, 0]).unwrap();
        assert!((j - 0.2).abs() < 1e-12, "{j}");
    }

    #[test]
    fn jain_in_between_and_undefined() {
        // (1+3)^2 / (2 * (1+9)) = 0.8
        assert!((jain(&[1, 3]).unwrap() - 0.8).abs() < 1e-12);
        assert_eq!(jain(&[]), None);
        assert_eq!(jain(&[0, 0]), None);
    }

    #[test]
    fn counts_add_up() {
        let mut c = Counts::default();
        let resp = |status| {
            Ok(Response {
                status,
                close: false,
                session_cookie: None,
                retry_after: None,
                body_len: 0,
            })
        };
        for r in [
            resp(200),
            resp(503),
            resp(404),
            Err(HttpError::Timeout),
            Err(HttpError::Truncated),
            Err(HttpError::Malformed("x")),
        ] {
            c.record(&r);
        }
        assert_eq!(c.requests, c.responses() + c.errors());
        assert_eq!((c.ok, c.unavailable, c.other), (1, 1, 1));
        assert_eq!((c.conn_errors, c.timeouts, c.malformed), (1, 1, 1));
    }
}
