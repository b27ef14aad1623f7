//! The command line: the flags ([`Cli`]), and what they mean once checked ([`Args`]): the
//! server's options, the assembly (the configuration file, or the built-in copy), the TLS
//! certificate loaded, the drain's deadline. Every check that can fail happens here, so that
//! `--check-config` and a real start refuse the same things with the same messages.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use whirl_config::Assembly;
use whirl_http::Limits;

use crate::config::Users;
use crate::ops::certs::ReloadableCert;
use crate::profile::Demo;
use crate::server::{H2Policy, H2Refusal, Options};

/// The command line.
#[derive(clap::Parser, Debug)]
#[command(
    name = "iris_http",
    about = "The Whirlwind paper's IRIS server, on whirl."
)]
pub struct Cli {
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
    /// `iris.toml` shipped with iris_http). Watched for changes (unless --no-watch) and read
    /// again on SIGHUP; changes apply live, what needs a restart is said on stderr.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Serve HTTPS with this certificate chain (PEM, leaf first); needs --tls-key. Read
    /// again, with the key, on SIGHUP: new handshakes use them, open connections keep theirs.
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
    /// Write an access log, one JSON object per answer, to this file (appended to; `-`:
    /// stdout). Lines are written by a thread of their own; if it falls behind, lines are
    /// dropped and counted, never waited for.
    #[arg(long, value_name = "PATH")]
    pub access_log: Option<PathBuf>,
    /// Record each request's trace through OpenTelemetry, one JSON object per span, in this
    /// file (appended to): the request's span and one per message it caused, in every
    /// process it touched.
    #[arg(long, value_name = "PATH")]
    pub trace_file: Option<PathBuf>,
    /// What `--trace-file` records, as a `tracing` filter.
    #[arg(long, value_name = "FILTER", default_value = crate::ops::traces::DEFAULT_FILTER, requires = "trace_file")]
    pub trace_filter: String,
    /// On SIGTERM or SIGINT, how long open connections have to finish (`10s`, `500ms`):
    /// then what is still queued is answered 503 with `Retry-After`, and the server stops.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = duration)]
    drain_timeout: Duration,
    /// Do not watch the configuration file for changes: apply them on SIGHUP only.
    #[arg(long)]
    no_watch: bool,
    /// Speak HTTP/1.1 only: no HTTP/2 by ALPN over TLS, nor by prior knowledge (h2c) in
    /// the clear.
    #[arg(long)]
    no_h2: bool,
    /// HTTP/2: streams a client may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS);
    /// more are refused with REFUSED_STREAM.
    #[arg(long, value_name = "N", default_value_t = H2Policy::default().max_streams,
          value_parser = clap::value_parser!(u32).range(1..))]
    h2_max_streams: u32,
    /// HTTP/2: how a stream refused under overload is answered: `503` (with Retry-After,
    /// after the shed delay, as over HTTP/1.1) or `rst` (RST_STREAM REFUSED_STREAM: safe
    /// to retry, and browsers retry at once).
    #[arg(long, value_name = "503|rst", default_value = "503", value_parser = h2_refusal)]
    h2_refusal: H2Refusal,
    /// Check the configuration (the file, the flags, the certificate and key, the users
    /// file) and exit: 0 and one line if it is good, 2 and what is wrong if not.
    #[arg(long)]
    pub check_config: bool,
}

/// A `--drain-timeout`: a duration such as `10s` or `1500ms`.
fn duration(value: &str) -> Result<Duration, String> {
    humantime::parse_duration(value).map_err(|e| format!("`{value}`: {e} (write `10s`, `500ms`)"))
}

/// An `--h2-refusal`: `503` or `rst`.
fn h2_refusal(value: &str) -> Result<H2Refusal, String> {
    match value {
        "503" => Ok(H2Refusal::Status503),
        "rst" => Ok(H2Refusal::RefusedStream),
        _ => Err("expected `503` or `rst`".to_owned()),
    }
}

/// A `--session-path`: an absolute path.
fn session_path(value: &str) -> Result<String, String> {
    match value.starts_with('/') {
        true => Ok(value.to_owned()),
        false => Err(format!("`{value}` is not a path (it must start with `/`)")),
    }
}

/// The checked command line.
pub struct Args {
    pub bind: SocketAddr,
    pub options: Options,
    /// Admission control on (the paper's design) or off (`--no-predicates`).
    pub predicates: bool,
    pub assembly: Assembly,
    /// The configuration file, which SIGHUP reads again (none for the built-in copy).
    pub file: Option<PathBuf>,
    /// Watch `file` for changes too (not with `--no-watch`).
    pub watch: bool,
    /// The certificate SIGHUP reloads, with `--tls-cert`.
    pub certs: Option<Arc<ReloadableCert>>,
    /// Where the access log goes (opened by `main`, not here: checking creates no file).
    pub access_log: Option<PathBuf>,
    pub drain_timeout: Duration,
}

/// The shipped configuration, where the sources are (so that edits to it are picked up).
const SHIPPED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src/bin/iris_http/iris.toml");
/// The same file, compiled in: the fallback when the binary runs away from its sources.
pub const BUILT_IN: &str = include_str!("iris.toml");

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
pub fn args(cli: Cli) -> Result<Args, String> {
    if !cli.root.is_dir() {
        return Err(format!(
            "iris_http: --root {}: not a directory",
            cli.root.display()
        ));
    }
    let (assembly, file) = assembly(cli.config.as_deref())?;
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
    options.h2 = H2Policy {
        enabled: !cli.no_h2,
        max_streams: cli.h2_max_streams,
        refusal: cli.h2_refusal,
    };
    let mut certs = None;
    if let (Some(cert), Some(key)) = (&cli.tls_cert, &cli.tls_key) {
        let (config, reloadable) = ReloadableCert::load(cert, key, options.h2.enabled)
            .map_err(|e| format!("iris_http: TLS: {e}"))?;
        options.tls = Some(config);
        certs = Some(reloadable);
    }
    if let Some(dir) = cli.access_log.as_deref().and_then(log_dir) {
        if !dir.is_dir() {
            return Err(format!(
                "iris_http: --access-log: {}: no such directory",
                dir.display()
            ));
        }
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
        watch: file.is_some() && !cli.no_watch,
        file,
        certs,
        access_log: cli.access_log,
        drain_timeout: cli.drain_timeout,
    })
}

/// The directory an access log file goes in (none for stdout, `-`).
fn log_dir(path: &Path) -> Option<&Path> {
    if path == Path::new("-") {
        return None;
    }
    match path.parent() {
        Some(dir) if dir.as_os_str().is_empty() => Some(Path::new(".")),
        dir => dir,
    }
}
