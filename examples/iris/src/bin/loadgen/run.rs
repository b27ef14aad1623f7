//! Starts one thread per session, releases them together, and gathers what they report.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::Instant;

use crate::cli::Config;
use crate::report::Report;
use crate::session::{self, Outcome, Shared, Window};
use crate::stats::{new_histogram, Class};

/// Session threads only hold a few small frames and heap buffers; a small stack is what lets
/// a couple of thousand of them exist at once.
const SESSION_STACK: usize = 64 * 1024;

/// Holds sessions back until every thread exists, so thread start-up does not stagger the
/// load; carries the common start time.
struct Gate {
    start: Mutex<Option<Instant>>,
    opened: Condvar,
}

impl Gate {
    fn wait(&self) -> Instant {
        let mut start = self.start.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(t) = *start {
                return t;
            }
            start = self.opened.wait(start).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn open(&self) -> Instant {
        let now = Instant::now();
        *self.start.lock().unwrap_or_else(|p| p.into_inner()) = Some(now);
        self.opened.notify_all();
        now
    }
}

/// Runs the whole load and returns the report. Fails only when the server address cannot be
/// resolved; sessions that could not be started are reported on stderr and left out.
pub fn run(cfg: &Config) -> Result<Report, String> {
    let addr = resolve(cfg)?;
    let shared = Arc::new(Shared {
        cfg: cfg.clone(),
        addr,
        hists: std::array::from_fn(|_| Mutex::new(new_histogram())),
    });
    let gate = Arc::new(Gate {
        start: Mutex::new(None),
        opened: Condvar::new(),
    });
    let plan = std::iter::repeat_n(Class::Admin, cfg.admins)
        .chain(std::iter::repeat_n(Class::User, cfg.users))
        .chain(std::iter::repeat_n(Class::Anonymous, cfg.anonymous));
    let mut handles = Vec::new();
    for (id, class) in plan.enumerate() {
        let (shared, gate) = (Arc::clone(&shared), Arc::clone(&gate));
        let spawned = thread::Builder::new()
            .name(format!("{}-{id}", class.name()))
            .stack_size(SESSION_STACK)
            .spawn(move || {
                let start = gate.wait();
                let measure_from = start + shared.cfg.warmup;
                let window = Window {
                    measure_from,
                    end: measure_from + shared.cfg.duration,
                };
                session::run(id, class, &shared, window)
            });
        match spawned {
            Ok(h) => handles.push(h),
            Err(e) => {
                eprintln!(
                    "loadgen: could not start session thread {id} ({e}); running with the {} \
                     sessions started so far",
                    handles.len()
                );
                break;
            }
        }
    }
    gate.open();

    let mut outcomes: Vec<Outcome> = Vec::with_capacity(handles.len());
    for h in handles {
        match h.join() {
            Ok(o) => outcomes.push(o),
            Err(_) => eprintln!("loadgen: a session thread panicked; its counts are lost"),
        }
    }
    let hists = match Arc::try_unwrap(shared) {
        Ok(shared) => shared
            .hists
            .map(|m| m.into_inner().unwrap_or_else(|p| p.into_inner())),
        Err(shared) => std::array::from_fn(|i| {
            shared.hists[i]
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone()
        }),
    };
    Ok(Report::new(cfg, &outcomes, hists))
}

fn resolve(cfg: &Config) -> Result<SocketAddr, String> {
    let t = &cfg.target;
    (t.host.as_str(), t.port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {}: {e}", t.authority))?
        .next()
        .ok_or_else(|| format!("{} resolves to no address", t.authority))
}
