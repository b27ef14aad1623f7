//! One simulated client: log in if its class needs to, then the closed loop of request, full
//! response, think time, until the run ends.

use std::net::SocketAddr;
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::cli::{Config, Credentials};
use crate::conn::Conn;
use crate::request;
use crate::rng::{think_time, XorShift};
use crate::stats::{Class, Counts};

/// After an error the session waits at least this long, so a dead server with `--think-ms 0`
/// is not hammered with millions of instant connect failures.
const ERROR_BACKOFF: Duration = Duration::from_millis(10);

/// What every session reads; the histograms are shared per class because per-session ones
/// would cost too much memory at thousands of sessions.
pub struct Shared {
    /// The run's settings.
    pub cfg: Config,
    /// The server, resolved once on the main thread (name resolution can need more stack
    /// than a session thread has).
    pub addr: SocketAddr,
    /// Latency in microseconds, indexed by [`Class::index`].
    pub hists: [Mutex<Histogram<u64>>; 4],
}

/// The run's clock: completions before `measure_from` are warm-up and not counted; the loop
/// stops sending at `end`.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    /// Start of the measured window.
    pub measure_from: Instant,
    /// End of the run.
    pub end: Instant,
}

impl Window {
    fn contains(&self, t: Instant) -> bool {
        t >= self.measure_from && t < self.end
    }
}

/// What a session reports when it ends.
#[derive(Clone, Copy, Debug)]
pub struct Outcome {
    /// The class it ended up in ([`Class::LoginFailed`] if its login did not succeed).
    pub class: Class,
    /// Its counts over the measured window.
    pub counts: Counts,
}

/// Runs session `id` of `class` until `window.end`.
pub fn run(id: usize, class: Class, shared: &Shared, window: Window) -> Outcome {
    let cfg = &shared.cfg;
    let host = cfg.target.authority.as_str();
    let mut rng = XorShift::new(cfg.seed ^ (id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut conn = Conn::new(shared.addr, cfg.timeout);

    let cred = match class {
        Class::Admin => Some(&cfg.admin_cred),
        Class::User => Some(&cfg.user_cred),
        Class::Anonymous | Class::LoginFailed => None,
    };
    let (class, cookie) = match cred.map(|c| login(&mut conn, host, c, &mut rng, cfg, window)) {
        None => (class, None),
        Some(Ok(cookie)) => (class, Some(cookie)),
        Some(Err(why)) => {
            eprintln!(
                "loadgen: {} session {id}: login failed ({why}); it continues without a \
                 cookie and is counted in the login_failed row",
                class.name()
            );
            (Class::LoginFailed, None)
        }
    };

    let build = |cookie: Option<&str>| -> Vec<Vec<u8>> {
        cfg.paths
            .iter()
            .map(|p| request::get(p, host, cookie))
            .collect()
    };
    let mut cookie = cookie;
    let mut requests = build(cookie.as_deref());
    let hist = &shared.hists[class.index()];
    let mut counts = Counts::default();
    while Instant::now() < window.end {
        let req = &requests[rng.below(requests.len())];
        let connects_before = conn.connects;
        // Latency runs from here to the last body byte, so it includes the connect whenever
        // this request had to open a connection.
        let sent = Instant::now();
        let result = conn.exchange(req);
        let done = Instant::now();
        if window.contains(done) {
            counts.record(&result);
            counts.connects += conn.connects - connects_before;
            if result.is_ok() {
                let micros =
                    u64::try_from(done.duration_since(sent).as_micros()).unwrap_or(u64::MAX);
                hist.lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .saturating_record(micros.max(1));
            }
        }
        // Like a browser, a session without a cookie keeps the one the server sets (an
        // anonymous session's), so the server can treat its requests as one session.
        if let (None, Ok(r)) = (&cookie, &result) {
            if let Some(set) = &r.session_cookie {
                cookie = Some(set.clone());
                requests = build(cookie.as_deref());
            }
        }
        let mut think = think_time(&mut rng, cfg.think, cfg.think_fixed);
        match &result {
            Err(_) => think = think.max(ERROR_BACKOFF),
            Ok(r) if r.status == 503 && cfg.honor_retry_after => {
                let asked = Duration::from_secs(r.retry_after.unwrap_or(0).min(3600));
                think = think.max(asked);
            }
            Ok(_) => {}
        }
        sleep_until_at_most(think, window.end);
    }
    Outcome { class, counts }
}

/// Logs in, retrying after think time while the server sheds load (503) or the connection
/// fails, because that is overload, not a refusal. Any other status is a refusal.
fn login(
    conn: &mut Conn,
    host: &str,
    cred: &Credentials,
    rng: &mut XorShift,
    cfg: &Config,
    window: Window,
) -> Result<String, String> {
    let req = request::login(host, cred);
    let mut last = String::from("no attempt");
    while Instant::now() < window.end {
        match conn.exchange(&req) {
            Ok(r) if r.status == 200 => {
                return r
                    .session_cookie
                    .ok_or_else(|| "200 without a session cookie".to_string())
            }
            Ok(r) if r.status == 503 => last = "503".to_string(),
            Ok(r) => return Err(format!("status {} for user `{}`", r.status, cred.user)),
            Err(e) => last = format!("{e:?}"),
        }
        let think = think_time(rng, cfg.think, cfg.think_fixed).max(ERROR_BACKOFF);
        sleep_until_at_most(think, window.end);
    }
    Err(format!(
        "the run ended before a login got through; last attempt: {last}"
    ))
}

fn sleep_until_at_most(d: Duration, end: Instant) {
    let left = end.saturating_duration_since(Instant::now());
    let d = d.min(left);
    if !d.is_zero() {
        thread::sleep(d);
    }
}
