//! The Whirlwind paper's IRIS HTTP server (section IV), built on whirl: sockets as
//! processes, one principal per HTTP session, shedding whole sessions, lowest priority first,
//! under overload.
//!
//! ```text
//! cargo run --release -p examples --bin iris_http -- --port 8080 --root examples/iris_root
//! ```
//!
//! Options: `--port N` (default 8080), `--bind ADDR` (default 127.0.0.1), `--root DIR` (the
//! files served under `/files/`, default `examples/iris_root`), `--users FILE` (lines
//! `name password role`, role `admin` or `user`; default the demo users `admin:secret` and
//! `alice:wonderland`), `--work-us N` (simulated CPU per unit of request work, default 100),
//! `--no-predicates` (admission control off, for comparison). Ctrl-C shuts down gracefully.
//!
//! Idle keep-alive connections are closed after 30 s; a request that has not fully arrived
//! after 10 s is answered 408 and its connection closed.

mod config;
mod http;
mod routes;
mod server;
mod sessions;
mod store;
#[cfg(test)]
mod tests;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use whirl::Runtime;

use config::Users;
use server::{Options, Server};

const USAGE: &str = "usage: iris_http [--port N] [--bind ADDR] [--root DIR] [--users FILE] [--work-us N] [--no-predicates]";

struct Args {
    bind: SocketAddr,
    options: Options,
}

fn parse_args(args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut port: u16 = 8080;
    let mut ip: IpAddr = [127, 0, 0, 1].into();
    let mut root = PathBuf::from("examples/iris_root");
    let mut users = Users::default_demo();
    let mut work_us: u64 = 100;
    let mut predicates = true;
    let mut args = args.peekable();
    while let Some(flag) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match flag.as_str() {
            "--port" => {
                port = value("--port")?
                    .parse()
                    .map_err(|e| format!("--port: {e}"))?
            }
            "--bind" => {
                ip = value("--bind")?
                    .parse()
                    .map_err(|e| format!("--bind: {e}"))?
            }
            "--root" => root = PathBuf::from(value("--root")?),
            "--users" => {
                let path = PathBuf::from(value("--users")?);
                users = Users::load(&path).map_err(|e| e.to_string())?;
            }
            "--work-us" => {
                work_us = value("--work-us")?
                    .parse()
                    .map_err(|e| format!("--work-us: {e}"))?;
            }
            "--no-predicates" => predicates = false,
            "--help" | "-h" => return Err(String::new()),
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    if !root.is_dir() {
        return Err(format!("--root {}: not a directory", root.display()));
    }
    let mut options = Options::new(root, users);
    options.work = Duration::from_micros(work_us);
    options.predicates = predicates;
    Ok(Args {
        bind: SocketAddr::new(ip, port),
        options,
    })
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(problem) => {
            if !problem.is_empty() {
                eprintln!("iris_http: {problem}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let rt = Runtime::builder().threads(1).build();
    let root = args.options.root.display().to_string();
    let predicates = args.options.predicates;
    let server = match Server::start(&rt, args.bind, args.options) {
        Ok(server) => server,
        Err(e) => {
            eprintln!("iris_http: cannot start on {}: {e}", args.bind);
            return ExitCode::FAILURE;
        }
    };
    println!("iris_http serving {root} at http://{}/", server.addr);
    println!(
        "  try: curl -i http://{}/files/index.html   (admission control {})",
        server.addr,
        if predicates { "on" } else { "off" }
    );
    println!("  Ctrl-C (or SIGTERM) stops");
    match whirl::signal::wait_for_signal() {
        Ok(signal) => println!("iris_http: {signal}, shutting down"),
        Err(e) => eprintln!("iris_http: cannot wait for signals ({e}); shutting down"),
    }
    server.stop_accepting();
    let report = rt.shutdown_timeout(Duration::from_secs(5));
    if !report.drained {
        eprintln!("iris_http: connections still open after 5 s were closed");
    }
    if !report.abandoned.is_empty() {
        eprintln!("iris_http: {report}");
    }
    ExitCode::SUCCESS
}
