//! Command-line parsing, with clap: every flag is validated as it is read (ranges, URL, paths,
//! credentials), so bad input ends in clap's error and the usage, with exit code 2, never a
//! panic.

use std::time::Duration;

use clap::error::ErrorKind;
use clap::{CommandFactory, Parser};

/// Upper bound on sessions: each is a thread, and past this the machine, not the server, is
/// what gets measured.
pub const MAX_SESSIONS: usize = 20_000;

/// Think times above an hour are surely a typo, and bounding them keeps the exponential sample
/// far away from `Duration` overflow.
const MAX_THINK_MS: u64 = 3_600_000;

/// Where the server is; `authority` is kept as typed because it becomes the `Host` header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// Host name or address without brackets.
    pub host: String,
    /// TCP port, 80 when the URL has none.
    pub port: u16,
    /// `host[:port]` as given in the URL.
    pub authority: String,
}

/// A `user:password` pair for `POST /login`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Credentials {
    /// Form field `user`.
    pub user: String,
    /// Form field `password`.
    pub password: String,
}

/// Request paths, each starting with `/`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Paths(pub Vec<String>);

/// The command line.
#[derive(Parser, Debug)]
#[command(
    name = "loadgen",
    about = "A closed-loop HTTP load generator: sessions that request, read the whole response, think, repeat.",
    after_help = "Each session is a thread running a closed loop: request, read the whole response, think, repeat."
)]
struct Args {
    /// The server, `http://HOST[:PORT]` (no path: give request paths with --paths).
    #[arg(long, value_parser = parse_url)]
    url: Target,
    /// Admin sessions (log in with --admin-cred).
    #[arg(long, default_value_t = 10)]
    admins: usize,
    /// User sessions (log in with --user-cred).
    #[arg(long, default_value_t = 10)]
    users: usize,
    /// Sessions without a login (they keep the cookie the server sets).
    #[arg(long, default_value_t = 10)]
    anonymous: usize,
    /// Mean think time between requests, milliseconds.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(0..=MAX_THINK_MS))]
    think_ms: u64,
    /// Think exactly --think-ms instead of exponentially with that mean.
    #[arg(long)]
    think_fixed: bool,
    /// Measured seconds (fractions allowed).
    #[arg(long, default_value = "30", value_parser = positive_secs)]
    duration_s: Duration,
    /// Seconds before measuring; completions in them are dropped.
    #[arg(long, default_value = "5", value_parser = secs)]
    warmup_s: Duration,
    /// Request paths, comma-separated, one chosen at random per request.
    #[arg(long, default_value = "/files/index.html,/resources,/resources/3", value_parser = parse_paths)]
    paths: Paths,
    /// Admin credentials, USER:PASSWORD.
    #[arg(long, default_value = "admin:secret", value_parser = parse_cred)]
    admin_cred: Credentials,
    /// User credentials, USER:PASSWORD.
    #[arg(long, default_value = "alice:wonderland", value_parser = parse_cred)]
    user_cred: Credentials,
    /// Connect/read/write timeout per socket operation, milliseconds.
    #[arg(long, default_value_t = 5000, value_parser = clap::value_parser!(u64).range(1..))]
    timeout_ms: u64,
    /// RNG seed, for repeatable think times and paths [default: from the clock].
    #[arg(long)]
    seed: Option<u64>,
    /// After a 503, wait the Retry-After it names (if longer than the think time).
    #[arg(long)]
    honor_retry_after: bool,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    json: bool,
}

/// Everything a run needs, already validated.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// The server.
    pub target: Target,
    /// Number of admin sessions.
    pub admins: usize,
    /// Number of user sessions.
    pub users: usize,
    /// Number of anonymous sessions.
    pub anonymous: usize,
    /// Mean (or exact, with `think_fixed`) think time.
    pub think: Duration,
    /// Whether think time is constant rather than exponential.
    pub think_fixed: bool,
    /// Length of the measured window.
    pub duration: Duration,
    /// Time before the measured window whose completions are dropped.
    pub warmup: Duration,
    /// Request paths, each starting with `/`.
    pub paths: Vec<String>,
    /// Credentials of admin sessions.
    pub admin_cred: Credentials,
    /// Credentials of user sessions.
    pub user_cred: Credentials,
    /// Per socket operation: connect, each read, each write.
    pub timeout: Duration,
    /// JSON output instead of the table.
    pub json: bool,
    /// Whether a 503's `Retry-After` delays the session's next request.
    pub honor_retry_after: bool,
    /// Base seed; each session derives its own stream from it.
    pub seed: u64,
}

/// Parses the arguments after the program name; `default_seed` is used when `--seed` is absent
/// (passed in so tests are deterministic). `--help` comes back as an error of kind
/// `DisplayHelp`, which `clap::Error::exit` prints with exit code 0.
pub fn parse<I>(args: I, default_seed: u64) -> Result<Config, clap::Error>
where
    I: IntoIterator<Item = String>,
{
    let args = Args::try_parse_from(std::iter::once("loadgen".to_owned()).chain(args))?;
    let sessions = args
        .admins
        .checked_add(args.users)
        .and_then(|n| n.checked_add(args.anonymous))
        .unwrap_or(usize::MAX);
    let invalid = |message: String| Args::command().error(ErrorKind::ValueValidation, message);
    if sessions == 0 {
        return Err(invalid(
            "no sessions: give at least one of --admins, --users, --anonymous".into(),
        ));
    }
    if sessions > MAX_SESSIONS {
        return Err(invalid(format!(
            "{sessions} sessions is more than the {MAX_SESSIONS} threads this tool allows"
        )));
    }
    Ok(Config {
        target: args.url,
        admins: args.admins,
        users: args.users,
        anonymous: args.anonymous,
        think: Duration::from_millis(args.think_ms),
        think_fixed: args.think_fixed,
        duration: args.duration_s,
        warmup: args.warmup_s,
        paths: args.paths.0,
        admin_cred: args.admin_cred,
        user_cred: args.user_cred,
        timeout: Duration::from_millis(args.timeout_ms),
        json: args.json,
        honor_retry_after: args.honor_retry_after,
        seed: args.seed.unwrap_or(default_seed),
    })
}

/// Seconds, fractions allowed, from 0 to 10^7 (NaN and infinities are out of range too).
fn secs(value: &str) -> Result<Duration, String> {
    let secs: f64 = value
        .parse()
        .map_err(|_| format!("`{value}` is not a number of seconds"))?;
    if !(0.0..=1e7).contains(&secs) {
        return Err(format!("`{value}` is out of range"));
    }
    Ok(Duration::from_secs_f64(secs))
}

fn positive_secs(value: &str) -> Result<Duration, String> {
    match secs(value)? {
        d if d.is_zero() => Err("must be more than 0".into()),
        d => Ok(d),
    }
}

fn parse_paths(value: &str) -> Result<Paths, String> {
    let paths: Vec<String> = value.split(',').map(|p| p.trim().to_string()).collect();
    for p in &paths {
        // Paths go straight into the request line, so anything that could break it is refused.
        if !p.starts_with('/') || p.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return Err(format!(
                "`{p}` must start with / and contain no spaces or control characters"
            ));
        }
    }
    Ok(Paths(paths))
}

fn parse_cred(value: &str) -> Result<Credentials, String> {
    match value.split_once(':') {
        Some((user, password)) if !user.is_empty() => Ok(Credentials {
            user: user.to_string(),
            password: password.to_string(),
        }),
        _ => Err(format!("expected USER:PASSWORD, got `{value}`")),
    }
}

/// Only plain `http://host[:port]` is accepted: TLS is out of scope, and a path in the URL would
/// be silently ignored in favour of `--paths`, so it is refused instead.
fn parse_url(url: &str) -> Result<Target, String> {
    let rest = match url.get(..7) {
        Some(scheme) if scheme.eq_ignore_ascii_case("http://") => &url[7..],
        _ => return Err(format!("`{url}` must start with http://")),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    if !path.is_empty() && path != "/" {
        return Err(format!(
            "give request paths with --paths, not in the URL (`{path}`)"
        ));
    }
    let bad = || format!("cannot read host and port from `{authority}`");
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (host, after) = v6.split_once(']').ok_or_else(bad)?;
        match after {
            "" => (host, None),
            _ => (host, Some(after.strip_prefix(':').ok_or_else(bad)?)),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if host.is_empty() || host.contains(|c: char| c.is_whitespace() || c == '@') {
        return Err(bad());
    }
    let port = match port {
        None => 80,
        Some(p) => match p.parse::<u16>() {
            Ok(p) if p > 0 => p,
            _ => return Err(format!("bad port `{p}`")),
        },
    };
    Ok(Target {
        host: host.to_string(),
        port,
        authority: authority.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    fn run(s: &str) -> Config {
        match parse(args(s), 1) {
            Ok(c) => c,
            Err(e) => panic!("expected a run config for `{s}`, got {e}"),
        }
    }

    #[test]
    fn defaults_need_only_the_url() {
        let c = run("--url http://127.0.0.1:8080");
        assert_eq!(c.target.host, "127.0.0.1");
        assert_eq!(c.target.port, 8080);
        assert_eq!(c.target.authority, "127.0.0.1:8080");
        assert_eq!((c.admins, c.users, c.anonymous), (10, 10, 10));
        assert_eq!(c.think, Duration::from_millis(100));
        assert!(!c.think_fixed && !c.json);
        assert_eq!(c.paths, ["/files/index.html", "/resources", "/resources/3"]);
        assert_eq!(c.admin_cred.user, "admin");
        assert_eq!(c.user_cred.password, "wonderland");
        assert_eq!(c.seed, 1);
    }

    #[test]
    fn every_flag_is_read() {
        let c = run(
            "--url http://localhost/ --admins 1 --users=2 --anonymous 3 --think-ms 0 \
             --think-fixed --duration-s 1.5 --warmup-s 0 --paths /a,/b --admin-cred root:x:y \
             --user-cred bob: --timeout-ms 250 --seed 99 --json",
        );
        assert_eq!(c.target.port, 80);
        assert_eq!((c.admins, c.users, c.anonymous), (1, 2, 3));
        assert_eq!(c.think, Duration::ZERO);
        assert!(c.think_fixed && c.json);
        assert_eq!(c.duration, Duration::from_millis(1500));
        assert_eq!(c.warmup, Duration::ZERO);
        assert_eq!(c.paths, ["/a", "/b"]);
        assert_eq!(c.admin_cred.password, "x:y");
        assert_eq!(c.user_cred.password, "");
        assert_eq!(c.timeout, Duration::from_millis(250));
        assert_eq!(c.seed, 99);
    }

    #[test]
    fn ipv6_url() {
        let c = run("--url http://[::1]:9000");
        assert_eq!((c.target.host.as_str(), c.target.port), ("::1", 9000));
        assert_eq!(c.target.authority, "[::1]:9000");
    }

    #[test]
    fn help_is_asked_for_not_an_error() {
        let help = parse(args("--url http://x:1 --help"), 0).expect_err("help is not a run");
        assert_eq!(help.kind(), ErrorKind::DisplayHelp);
        assert_eq!(help.exit_code(), 0);
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        for bad in [
            "",
            "--admins 3",
            "--url",
            "--url https://x:1",
            "--url http://x:1/path",
            "--url http://:80",
            "--url http://x:0",
            "--url http://x:99999",
            "--url http://x:1 --admins -1",
            "--url http://x:1 --admins many",
            "--url http://x:1 --admins 0 --users 0 --anonymous 0",
            "--url http://x:1 --admins 100000",
            "--url http://x:1 --think-ms 99999999999",
            "--url http://x:1 --duration-s 0",
            "--url http://x:1 --duration-s nan",
            "--url http://x:1 --warmup-s -1",
            "--url http://x:1 --paths resources",
            "--url http://x:1 --paths /a,",
            "--url http://x:1 --admin-cred nocolon",
            "--url http://x:1 --user-cred :pw",
            "--url http://x:1 --timeout-ms 0",
            "--url http://x:1 --json=yes",
            "--url http://x:1 --bogus",
            "--url http://x:1 --seed",
        ] {
            let e = parse(args(bad), 0).expect_err(bad);
            assert_eq!(e.exit_code(), 2, "`{bad}`: {e}");
        }
    }
}
