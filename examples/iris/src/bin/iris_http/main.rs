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
//! a file that cannot be used is refused with what is wrong with it and exit status 2),
//! `--access-log PATH` (one JSON line per answer; `-` for stdout), `--drain-timeout D`
//! (default `10s`), `--no-watch` (apply configuration changes on SIGHUP only),
//! `--check-config` (check everything above and exit: 0 and `iris_http: configuration OK`,
//! or 2 and the error, at `FILE:LINE:COLUMN` for the configuration file).
//!
//! Operated like nginx (`ops/`, `server/drain.rs`):
//!
//! * `/healthz` (200 while the process serves), `/readyz` (503 once draining) and `/metrics`
//!   (Prometheus' text exposition: requests by method and status class, in flight,
//!   connections, bytes, durations, access-log drops, the drain, reloads), answered without
//!   admission control or a session.
//! * SIGTERM or SIGINT drains: readiness goes false, the listener closes, requests in flight
//!   are answered, each connection's next answer carries `Connection: close`, quiet
//!   connections are closed; at `--drain-timeout`, what is still waiting is answered 503 with
//!   `Retry-After`, and the server stops. No connection is closed on a request it has not
//!   answered.
//! * SIGHUP reloads the configuration file (what needs a restart is said on stderr) and the
//!   TLS certificate and key (new handshakes use them; open connections keep theirs),
//!   without dropping a connection; a file that fails keeps the last good one, says why on
//!   stderr, and counts in `/metrics`.
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
//! HTTP/2 is spoken over TLS when ALPN agrees on `h2`, and in the clear by prior knowledge
//! (h2c), beside HTTP/1.1 on the same port (`--no-h2`: HTTP/1.1 only); each stream is a
//! request on the same path (session, dispatcher, admission). `--h2-max-streams` (100) bounds
//! the streams a client may open at once, `--h2-refusal 503|rst` says how a stream refused
//! under overload is answered.
//!
//! Cookies are `HttpOnly`, `SameSite=Lax` and, over TLS, `Secure`; an answer that sets one
//! is `Cache-Control: private`.

mod cli;
mod config;
mod ops;
mod profile;
mod routes;
mod server;
mod sessions;
mod store;
#[cfg(test)]
mod tests;
mod trim;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use whirl::signal::{ServiceSignal, ServiceSignals, ShutdownSignal};
use whirl::Runtime;
use whirl_config::{Assembled, Factories, Reloader};

use cli::{Args, Cli};
use ops::access_log::{self, Writer};
use ops::reload::{self, ConfigFile, Reload};
use ops::traces::Tracing;
use server::Server;

#[cfg(test)]
pub(crate) use cli::BUILT_IN;

/// How long the runtime has to stop once the drain is over (handlers still busy with
/// requests already answered 503).
const STOP_GRACE: Duration = Duration::from_secs(5);

fn main() -> ExitCode {
    let cli = <Cli as clap::Parser>::parse();
    if cli.check_config {
        return check_config(cli);
    }
    // Before anything else: from now on a SIGHUP reloads instead of killing the process.
    let mut signals = match ServiceSignals::install() {
        Ok(signals) => signals,
        Err(e) => {
            eprintln!("iris_http: cannot install signal handlers: {e}");
            return ExitCode::FAILURE;
        }
    };
    let tracing = match cli.trace_file.as_deref() {
        Some(path) => match Tracing::install(path, &cli.trace_filter) {
            Ok(tracing) => Some(tracing),
            Err(e) => {
                eprintln!("iris_http: {e}");
                return ExitCode::from(2);
            }
        },
        None => None,
    };
    let mut args = match cli::args(cli) {
        Ok(args) => args,
        Err(problem) => {
            eprintln!("{problem}");
            return ExitCode::from(2);
        }
    };
    let log_writer = match &args.access_log {
        Some(path) => match Writer::open(path, access_log::CAPACITY) {
            Ok((writer, sink)) => {
                args.options.access_log = Some(sink);
                Some(writer)
            }
            Err(e) => {
                eprintln!("iris_http: {e}");
                return ExitCode::from(2);
            }
        },
        None => None,
    };
    let (rt, assembled, server) = match start(&args) {
        Ok(started) => started,
        Err(code) => return code,
    };
    let reloader = watch(&args, &assembled);
    let reload = Reload {
        config: args.file.clone().map(|path| ConfigFile {
            path,
            assembled: Arc::clone(&assembled),
            predicates: args.predicates,
        }),
        cert: args.certs.clone(),
        metrics: server.ops().metrics.clone(),
    };
    let signal = loop {
        match signals.wait() {
            ServiceSignal::Reload => {
                eprintln!("iris_http: SIGHUP: reloading");
                let outcomes = reload.run();
                eprintln!("iris_http: SIGHUP: {}", outcomes.summary());
            }
            ServiceSignal::Shutdown(signal) => break signal,
            // Signals a later whirl adds.
            _ => {}
        }
    };
    drop(reloader);
    stop(rt, server, signal, args.drain_timeout);
    if let Some(writer) = log_writer {
        writer.finish();
    }
    if let Some(tracing) = tracing {
        tracing.finish();
    }
    ExitCode::SUCCESS
}

/// Builds the runtime and the groups, starts the server and says where it serves; or the
/// exit code, the problem said on stderr.
fn start(args: &Args) -> Result<(Runtime, Arc<Assembled>, Server), ExitCode> {
    let built = args
        .assembly
        .runtime()
        .and_then(|rt| Ok((args.assembly.build(&rt, &Factories::new())?, rt)));
    let (assembled, rt) = match built {
        Ok(built) => built,
        Err(e) => {
            eprintln!("error: {e}");
            return Err(ExitCode::from(2));
        }
    };
    let file = args.file.as_ref().map_or_else(
        || "iris.toml (built in)".to_owned(),
        |path| path.display().to_string(),
    );
    let scheme = match args.options.tls {
        Some(_) => "https",
        None => "http",
    };
    let server = match Server::start(&rt, args.bind, args.options.clone()) {
        Ok(server) => server,
        // A group the server needs that the file does not define: the file's fault.
        Err(e @ server::StartError::MissingGroup(_)) => {
            eprintln!("error: {file}: {e}");
            return Err(ExitCode::from(2));
        }
        Err(e) => {
            eprintln!("iris_http: cannot start on {}: {e}", args.bind);
            return Err(ExitCode::FAILURE);
        }
    };
    // `say`, not `println!`: a server whose stdout was closed (its reader went away) keeps
    // serving instead of panicking on the broken pipe.
    say(format_args!(
        "iris_http serving {} at {scheme}://{}/",
        args.options.root.display(),
        server.addr
    ));
    say(format_args!("  configuration: {}", args.assembly.origin()));
    let work = args.options.work;
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
        if args.predicates { "on" } else { "off" }
    ));
    say(format_args!(
        "  /healthz, /readyz, /metrics; SIGHUP reloads; Ctrl-C (or SIGTERM) drains and stops"
    ));
    Ok((rt, Arc::new(assembled), server))
}

/// Watches the configuration file, unless there is none or `--no-watch`.
fn watch(args: &Args, assembled: &Arc<Assembled>) -> Option<Reloader> {
    let path = args.file.as_ref().filter(|_| args.watch)?;
    let watched = path.display().to_string();
    let report = move |outcome| reload::report_config(&watched, &outcome);
    let every = Duration::from_secs(1);
    match Reloader::watch(Arc::clone(assembled), path, &args.assembly, every, report) {
        Ok(reloader) => Some(reloader),
        Err(e) => {
            eprintln!("iris_http: cannot watch {}: {e}", path.display());
            None
        }
    }
}

/// Drains the server, then shuts the runtime down, saying how it went.
fn stop(rt: Runtime, server: Server, signal: ShutdownSignal, drain_timeout: Duration) {
    say(format_args!(
        "iris_http: {signal}, draining (up to {})",
        humantime::format_duration(drain_timeout)
    ));
    let drained = server.drain(drain_timeout);
    match drained.at_deadline {
        0 => say(format_args!(
            "iris_http: drained in {} ms",
            drained.took.as_millis()
        )),
        open => eprintln!(
            "iris_http: {open} connection(s) still open at the drain's deadline: what they \
             had queued was answered 503"
        ),
    }
    if drained.left > 0 {
        eprintln!(
            "iris_http: {} connection(s) still open after the deadline are closed now",
            drained.left
        );
    }
    drop(server);
    let report = rt.shutdown_timeout(STOP_GRACE);
    if !report.abandoned.is_empty() {
        eprintln!("iris_http: {report}");
    }
    say(format_args!("iris_http: stopped"));
}

/// `--check-config`: everything a start checks, and building the groups on a runtime that
/// is shut down at once; exit status 0 and one line, or 2 and the problem.
fn check_config(cli: Cli) -> ExitCode {
    let args = match cli::args(cli) {
        Ok(args) => args,
        Err(problem) => {
            eprintln!("{problem}");
            return ExitCode::from(2);
        }
    };
    let origin = args.assembly.origin().to_owned();
    let names: Vec<&str> = args.assembly.group_names().collect();
    if let Some(missing) = server::GROUPS.iter().find(|name| !names.contains(name)) {
        let e = server::StartError::MissingGroup(missing);
        eprintln!("error: {origin}: {e}");
        return ExitCode::from(2);
    }
    let built = args.assembly.runtime().and_then(|rt| {
        let built = args.assembly.build(&rt, &Factories::new()).map(drop);
        rt.shutdown_timeout(Duration::from_secs(1));
        built
    });
    if let Err(e) = built {
        eprintln!("error: {e}");
        return ExitCode::from(2);
    }
    say(format_args!("iris_http: configuration OK: {origin}"));
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
