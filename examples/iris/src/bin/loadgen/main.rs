//! A closed-loop HTTP load generator in the style of SEDA's (Welsh, dissertation chapter 6):
//! a fixed population of sessions, each on its own thread, each sending a request, reading the
//! whole response, thinking for an exponentially distributed time, and repeating. Offered load
//! therefore follows the server's response time, as with real users, instead of piling up as
//! an open-loop generator's would.
//!
//! ```text
//! cargo run --release -p iris --bin loadgen -- --url http://127.0.0.1:8080 \
//!     --admins 5 --users 50 --anonymous 200 --think-ms 20 --duration-s 30 --warmup-s 5
//! ```
//!
//! Sessions come in three classes (admin, user, anonymous; admin and user log in first and
//! send the session cookie), so the report can show how an overloaded server treats each:
//! per class, requests, 200s, 503s, errors, throughput, latency percentiles, and Jain's
//! fairness index across the class's sessions. `--json` prints the same as one JSON object.

mod cli;
mod conn;
mod json;
mod report;
mod request;
mod response;
mod rng;
mod run;
mod session;
mod stats;
mod table;

#[cfg(test)]
mod e2e;

use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

fn main() -> ExitCode {
    let clock_seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64);
    let cfg = match cli::parse(std::env::args().skip(1), clock_seed) {
        Ok(cfg) => cfg,
        // `--help` (exit 0) or a usage error (exit 2), printed by clap.
        Err(e) => e.exit(),
    };
    match run::run(&cfg) {
        Ok(report) if cfg.json => println!("{}", json::render(&report)),
        Ok(report) => print!("{}", table::render(&report)),
        Err(e) => {
            eprintln!("loadgen: {e}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
