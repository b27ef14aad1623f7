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
//!
//! Files under `/files/` are served as static file servers serve them: `Date`, `ETag`,
//! `Last-Modified`, 304 to conditional requests, 206 to a single byte range, percent-encoded
//! paths decoded (and checked after decoding), a directory's `index.html` for `/dir/` and a
//! 301 from `/dir` to it. Requests may carry chunked bodies and `Expect: 100-continue`; an
//! HTTP/1.1 request without exactly one `Host` is refused (400).

mod config;
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

/// The command line.
#[derive(clap::Parser, Debug)]
#[command(
    name = "iris_http",
    about = "The Whirlwind paper's IRIS server, on whirl."
)]
struct Cli {
    /// TCP port to listen on.
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    bind: IpAddr,
    /// Directory of the static files served under /files.
    #[arg(long, default_value = "examples/iris_root")]
    root: PathBuf,
    /// Users file: `name password role` per line (default: the demo users).
    #[arg(long)]
    users: Option<PathBuf>,
    /// Simulated work per dynamic request, microseconds.
    #[arg(long, default_value_t = 100)]
    work_us: u64,
    /// Turn admission control off (for comparison).
    #[arg(long)]
    no_predicates: bool,
}

struct Args {
    bind: SocketAddr,
    options: Options,
}

/// The validated arguments, or what is wrong with them.
fn args(cli: Cli) -> Result<Args, String> {
    if !cli.root.is_dir() {
        return Err(format!("--root {}: not a directory", cli.root.display()));
    }
    let users = match &cli.users {
        Some(path) => Users::load(path).map_err(|e| e.to_string())?,
        None => Users::default_demo(),
    };
    let mut options = Options::new(cli.root, users);
    options.work = Duration::from_micros(cli.work_us);
    options.predicates = !cli.no_predicates;
    Ok(Args {
        bind: SocketAddr::new(cli.bind, cli.port),
        options,
    })
}

fn main() -> ExitCode {
    let args = match args(<Cli as clap::Parser>::parse()) {
        Ok(args) => args,
        Err(problem) => {
            eprintln!("iris_http: {problem}");
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
