//! The Whirlwind paper's IRIS HTTP server (section IV), built on whirl: sockets as
//! processes, one principal per HTTP session, shedding whole sessions, lowest priority first,
//! under overload.
//!
//! ```text
//! cargo run --release -p iris --bin iris_http -- --port 8080 --root examples/iris/iris_root
//! cargo run --release -p iris --bin iris_http -- --demo overload   # the paper's overload demo
//! ```
//!
//! With no flags it is a static file server with the paper's structure (sessions as
//! principals, groups, predicates that shed only under overload) and no simulated work;
//! `--demo overload` is the paper's overload demo (`profile.rs`: 100 µs of simulated work
//! per unit of request work, so that capacity is small and load can exceed it).
//!
//! Options: `--port N` (default 8080), `--bind ADDR` (default 127.0.0.1), `--root DIR` (the
//! files served under `/files/`, default `examples/iris/iris_root`), `--users FILE` (lines
//! `name password role`, role `admin` or `user`; default the demo users `admin:secret` and
//! `alice:wonderland`), `--demo overload` (the overload demo's defaults), `--work-us N`
//! (simulated CPU per unit of request work: default 0, 100 in the overload demo),
//! `--session-path PREFIX` (where a client without a session is given an anonymous one, its
//! cookie set on that answer; repeatable, replaces the default `/resources`; a login always
//! starts a session, a static file or a 304 never sets one), `--hsts-max-age SECS` (send
//! `Strict-Transport-Security` over TLS), `--max-header-line-bytes N`, `--max-head-bytes N`,
//! `--max-headers N` (a request line longer than a line may be is answered 414; a longer
//! header line, a longer head or more headers, 431; defaults 8 KiB, 32 KiB, 100),
//! `--no-predicates` (admission control off, for comparison), `--file-io-process` (files
//! opened and read by an `AsyncFile` process per request, as in the paper, instead of by the
//! file handler), `--shed-delay-ms N` (how long a 503 is held before it is written, default
//! 50), `--close-on-503` (close the connection after a 503; by default it stays open),
//! `--anonymous-idle-s N` (an anonymous session unused this long is dropped, default 10;
//! logged-in ones after 30 min), `--config FILE` (the groups,
//! their predicates, schedulers and controllers, assembled by `whirl-config`; default the
//! `iris.toml` shipped beside this file), `--tls-cert CERT.pem --tls-key KEY.pem` (serve
//! HTTPS: the certificate chain, leaf first, and its private key, both PEM; both or neither;
//! a file that cannot be used is refused with what is wrong with it and exit status 2).
//! Ctrl-C shuts down gracefully.
//!
//! With TLS, each connection's handshake runs in its socket process, in the "sockets" group,
//! on behalf of the client address's principal, and is offered to that group's predicate
//! first (`iris.toml`: a burst is queued while the group keeps its 1 s response-time target,
//! and past it new handshakes beyond a queue of 256 are refused): a flood of handshakes is
//! refused like any overload, each refused connection closed before any cryptography, and
//! counted.
//!
//! The configuration is watched while the server runs: edited predicate thresholds and
//! budgets, and controller parameters, apply within a second without a restart; what needs a
//! restart is said on stderr. A file with an error is refused with its line and column
//! (`error: FILE:LINE:COLUMN: what was expected`) and exit status 2, as is one that lacks a
//! group the server needs (`error: FILE: the configuration defines no group ...`).
//!
//! Idle keep-alive connections are closed after 30 s; a request that has not fully arrived
//! after 10 s is answered 408 and its connection closed.
//!
//! Files under `/files/` are served as static file servers serve them: `Date`, `ETag`,
//! `Last-Modified`, 304 and 412 to conditional requests (RFC 9110 §13.2.2's order), 206 to
//! a single byte range, percent-encoded
//! paths decoded (and checked after decoding), a directory's `index.html` for `/dir/` and a
//! 301 from `/dir` to it. Requests may carry chunked bodies and `Expect: 100-continue`; an
//! HTTP/1.1 request without exactly one `Host` is refused (400); `HTTP/1.2` and later minor
//! versions are served as HTTP/1.1, other major versions answered 505.
//!
//! Cookies are `HttpOnly`, `SameSite=Lax` and, over TLS, `Secure`; an answer that sets one
//! is `Cache-Control: private`.

mod config;
mod profile;
mod routes;
mod server;
mod sessions;
mod store;
#[cfg(test)]
mod tests;
mod trim;

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use whirl_config::{Assembly, Factories, Reloader};
use whirl_http::Limits;

use config::Users;
use profile::Demo;
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
    #[arg(long, default_value = "examples/iris/iris_root")]
    root: PathBuf,
    /// Users file: `name password role` per line (default: the demo users).
    #[arg(long)]
    users: Option<PathBuf>,
    /// A named profile: `overload`, the paper's overload demo (simulated work per request).
    #[arg(long, value_name = "NAME")]
    demo: Option<Demo>,
    /// Simulated CPU per unit of request work, microseconds (default 0; 100 with
    /// `--demo overload`).
    #[arg(long)]
    work_us: Option<u64>,
    /// Where a client without a session is given an anonymous one (a decoded path prefix;
    /// repeatable; default /resources). Static files never start one.
    #[arg(long = "session-path", value_name = "PREFIX", value_parser = session_path)]
    session_paths: Vec<String>,
    /// Send `Strict-Transport-Security: max-age=SECS` with every answer over TLS.
    #[arg(long, value_name = "SECS", requires = "tls_cert")]
    hsts_max_age: Option<u64>,
    /// Turn admission control off (for comparison).
    #[arg(long)]
    no_predicates: bool,
    /// Open and read files in an `AsyncFile` process per request (the paper's design)
    /// instead of in the file handler.
    #[arg(long)]
    file_io_process: bool,
    /// Milliseconds a refused request's 503 is held before it is written.
    #[arg(long, default_value_t = 50)]
    shed_delay_ms: u64,
    /// Close the connection after a 503 (by default it stays open).
    #[arg(long)]
    close_on_503: bool,
    /// Seconds an anonymous session may stay unused before it is dropped.
    #[arg(long, default_value_t = 10)]
    anonymous_idle_s: u64,
    /// The assembly file: groups, predicates, schedulers, controllers (default: the
    /// `iris.toml` shipped with iris_http).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Serve HTTPS with this certificate chain (PEM, leaf first); needs --tls-key.
    #[arg(long, value_name = "CERT.pem", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "KEY.pem", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Longest line of a request head, bytes: a longer request line is answered 414, a
    /// longer header line 431.
    #[arg(long, value_name = "BYTES", default_value_t = Limits::default().max_line_bytes)]
    max_header_line_bytes: usize,
    /// Longest request head (request line and headers), bytes; longer is answered 431.
    #[arg(long, value_name = "BYTES", default_value_t = Limits::default().max_head_bytes)]
    max_head_bytes: usize,
    /// Most headers in one request; more are answered 431.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_headers)]
    max_headers: usize,
}

/// A `--session-path`: an absolute path.
fn session_path(value: &str) -> Result<String, String> {
    match value.starts_with('/') {
        true => Ok(value.to_owned()),
        false => Err(format!("`{value}` is not a path (it must start with `/`)")),
    }
}

struct Args {
    bind: SocketAddr,
    options: Options,
    /// Admission control on (the paper's design) or off (`--no-predicates`).
    predicates: bool,
    assembly: Assembly,
    /// The file to watch for changes (none for the built-in copy).
    watch: Option<PathBuf>,
}

/// The shipped configuration, where the sources are (so that edits to it are picked up).
const SHIPPED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src/bin/iris_http/iris.toml");
/// The same file, compiled in: the fallback when the binary runs away from its sources.
pub(crate) const BUILT_IN: &str = include_str!("iris.toml");

/// The assembly: `--config FILE`, else the shipped file (beside the sources, or beside the
/// executable), else the built-in copy; and the file to watch.
fn assembly(config: Option<&Path>) -> Result<(Assembly, Option<PathBuf>), String> {
    let error = |e: whirl_config::ConfigError| format!("error: {e}");
    if let Some(path) = config {
        return Ok((Assembly::from_file(path).map_err(error)?, Some(path.into())));
    }
    let beside_exe = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.join("iris.toml")));
    let found = [Some(PathBuf::from(SHIPPED)), beside_exe]
        .into_iter()
        .flatten()
        .find(|path| path.is_file());
    match found {
        Some(path) => Ok((Assembly::from_file(&path).map_err(error)?, Some(path))),
        None => Ok((
            Assembly::parse(BUILT_IN, "iris.toml (built in)").map_err(error)?,
            None,
        )),
    }
}

/// The validated arguments, or what is wrong with them (the message to print: configuration
/// errors as `error: FILE:LINE:COLUMN: ...`).
fn args(cli: Cli) -> Result<Args, String> {
    if !cli.root.is_dir() {
        return Err(format!(
            "iris_http: --root {}: not a directory",
            cli.root.display()
        ));
    }
    let (assembly, watch) = assembly(cli.config.as_deref())?;
    let assembly = match cli.no_predicates {
        true => assembly.without_predicates(),
        false => assembly,
    };
    let users = match &cli.users {
        Some(path) => Users::load(path).map_err(|e| format!("iris_http: {e}"))?,
        None => Users::default_demo(),
    };
    let mut options = Options::new(cli.root, users);
    if let Some(demo) = cli.demo {
        options = demo.apply(options);
    }
    if let Some(work_us) = cli.work_us {
        options.work = Duration::from_micros(work_us);
    }
    if !cli.session_paths.is_empty() {
        options.session_paths = cli.session_paths;
    }
    options.hsts = cli.hsts_max_age.map(Duration::from_secs);
    if let (Some(cert), Some(key)) = (&cli.tls_cert, &cli.tls_key) {
        let config = whirl::net::tls::server_config(cert, key)
            .map_err(|e| format!("iris_http: TLS: {e}"))?;
        options.tls = Some(config);
    }
    options.file_io_process = cli.file_io_process;
    options.shed.delay = Duration::from_millis(cli.shed_delay_ms);
    options.shed.close = cli.close_on_503;
    options.sessions.anonymous_idle = Duration::from_secs(cli.anonymous_idle_s);
    options.limits = Limits {
        max_line_bytes: cli.max_header_line_bytes,
        max_head_bytes: cli.max_head_bytes,
        max_headers: cli.max_headers,
        ..Limits::default()
    };
    Ok(Args {
        bind: SocketAddr::new(cli.bind, cli.port),
        options,
        predicates: !cli.no_predicates,
        assembly,
        watch,
    })
}

fn main() -> ExitCode {
    let args = match args(<Cli as clap::Parser>::parse()) {
        Ok(args) => args,
        Err(problem) => {
            eprintln!("{problem}");
            return ExitCode::from(2);
        }
    };
    let built = args
        .assembly
        .runtime()
        .and_then(|rt| Ok((args.assembly.build(&rt, &Factories::new())?, rt)));
    let (assembled, rt) = match built {
        Ok(built) => built,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let assembled = Arc::new(assembled);
    let reloader = args.watch.as_ref().and_then(|path| {
        let watched = path.display().to_string();
        let report =
            move |outcome: Result<whirl_config::Reloaded, whirl_config::ConfigError>| match outcome
            {
                Ok(reloaded) => {
                    for path in &reloaded.applied {
                        eprintln!("iris_http: {watched}: applied {path}");
                    }
                    for restart in &reloaded.needs_restart {
                        eprintln!("iris_http: {restart}");
                    }
                }
                Err(e) => eprintln!("iris_http: error: {e} (the last good configuration stays)"),
            };
        let every = Duration::from_secs(1);
        match Reloader::watch(Arc::clone(&assembled), path, &args.assembly, every, report) {
            Ok(reloader) => Some(reloader),
            Err(e) => {
                eprintln!("iris_http: cannot watch {}: {e}", path.display());
                None
            }
        }
    });
    let file = args.watch.as_ref().map_or_else(
        || "iris.toml (built in)".to_owned(),
        |path| path.display().to_string(),
    );
    let root = args.options.root.display().to_string();
    let work = args.options.work;
    let predicates = args.predicates;
    let scheme = match args.options.tls {
        Some(_) => "https",
        None => "http",
    };
    let server = match Server::start(&rt, args.bind, args.options) {
        Ok(server) => server,
        // A group the server needs that the file does not define: the file's fault.
        Err(e @ server::StartError::MissingGroup(_)) => {
            eprintln!("error: {file}: {e}");
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("iris_http: cannot start on {}: {e}", args.bind);
            return ExitCode::FAILURE;
        }
    };
    // `say`, not `println!`: a server whose stdout was closed (its reader went away) keeps
    // serving instead of panicking on the broken pipe.
    say(format_args!(
        "iris_http serving {root} at {scheme}://{}/",
        server.addr
    ));
    say(format_args!("  configuration: {}", args.assembly.origin()));
    match work.is_zero() {
        true => say(format_args!("  no simulated work")),
        false => say(format_args!(
            "  simulated work: {} us per unit of request work",
            work.as_micros()
        )),
    }
    say(format_args!(
        "  try: curl -i {}{scheme}://{}/files/index.html   (admission control {})",
        if scheme == "https" { "-k " } else { "" },
        server.addr,
        if predicates { "on" } else { "off" }
    ));
    say(format_args!("  Ctrl-C (or SIGTERM) stops"));
    match whirl::signal::wait_for_signal() {
        Ok(signal) => say(format_args!("iris_http: {signal}, shutting down")),
        Err(e) => eprintln!("iris_http: cannot wait for signals ({e}); shutting down"),
    }
    drop(reloader);
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

/// Writes a line to stdout, ignoring a closed or full stdout (nobody reading is no reason for
/// a server to stop).
fn say(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}
