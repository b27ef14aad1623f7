//! Command-line parsing, by hand: bad input must end in the usage text and exit code 2, never a
//! panic, and the binary should not need an argument-parsing dependency for a dozen flags.

use std::time::Duration;

/// Printed on `--help` and after every parse error.
pub const USAGE: &str = "\
usage: loadgen --url http://HOST[:PORT] [options]

  --admins N            admin sessions (log in with --admin-cred)        [default 10]
  --users N             user sessions (log in with --user-cred)          [default 10]
  --anonymous N         sessions without a login (they keep the cookie the server sets) [default 10]
  --think-ms T          mean think time between requests, milliseconds  [default 100]
  --think-fixed         think exactly T ms instead of exponential with mean T
  --duration-s D        measured seconds (fractions allowed)             [default 30]
  --warmup-s W          seconds before measuring; completions dropped    [default 5]
  --paths P1,P2,...     request paths, one chosen at random per request
                        [default /files/index.html,/resources,/resources/3]
  --admin-cred U:P      admin credentials                                [default admin:secret]
  --user-cred U:P       user credentials                                 [default alice:wonderland]
  --timeout-ms MS       connect/read/write timeout per socket operation  [default 5000]
  --seed S              RNG seed, for repeatable think times and paths   [default: from the clock]
  --honor-retry-after   after a 503, wait the Retry-After it names (if longer than think time)
  --json                print one JSON object instead of the table
  --help                this text

Each session is a thread running a closed loop: request, read the whole response, think, repeat.";

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

/// What the command line asked for.
#[derive(Debug, PartialEq)]
pub enum Parsed {
    /// Run the load.
    Run(Box<Config>),
    /// Print the usage and exit successfully.
    Help,
}

/// Parses the arguments after the program name; `default_seed` is used when `--seed` is absent
/// (passed in so tests are deterministic).
pub fn parse<I>(args: I, default_seed: u64) -> Result<Parsed, String>
where
    I: IntoIterator<Item = String>,
{
    let mut url = None;
    let mut admins = 10;
    let mut users = 10;
    let mut anonymous = 10;
    let mut think_ms = 100;
    let mut think_fixed = false;
    let mut honor_retry_after = false;
    let mut duration = Duration::from_secs(30);
    let mut warmup = Duration::from_secs(5);
    let mut paths = parse_paths("/files/index.html,/resources,/resources/3")?;
    let mut admin_cred = parse_cred("--admin-cred", "admin:secret")?;
    let mut user_cred = parse_cred("--user-cred", "alice:wonderland")?;
    let mut timeout_ms = 5000;
    let mut json = false;
    let mut seed = default_seed;

    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        // Accept both `--flag value` and `--flag=value`.
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        match flag.as_str() {
            "--help" | "-h" => return Ok(Parsed::Help),
            "--think-fixed" => think_fixed = no_value(&flag, inline)?,
            "--json" => json = no_value(&flag, inline)?,
            "--honor-retry-after" => honor_retry_after = no_value(&flag, inline)?,
            _ => {
                let mut value = || -> Result<String, String> {
                    inline
                        .clone()
                        .or_else(|| args.next())
                        .ok_or_else(|| format!("{flag} needs a value"))
                };
                match flag.as_str() {
                    "--url" => url = Some(parse_url(&value()?)?),
                    "--admins" => admins = parse_count(&flag, &value()?)?,
                    "--users" => users = parse_count(&flag, &value()?)?,
                    "--anonymous" => anonymous = parse_count(&flag, &value()?)?,
                    "--think-ms" => think_ms = parse_u64(&flag, &value()?)?,
                    "--duration-s" => duration = parse_secs(&flag, &value()?)?,
                    "--warmup-s" => warmup = parse_secs(&flag, &value()?)?,
                    "--paths" => paths = parse_paths(&value()?)?,
                    "--admin-cred" => admin_cred = parse_cred(&flag, &value()?)?,
                    "--user-cred" => user_cred = parse_cred(&flag, &value()?)?,
                    "--timeout-ms" => timeout_ms = parse_u64(&flag, &value()?)?,
                    "--seed" => seed = parse_u64(&flag, &value()?)?,
                    _ => return Err(format!("unknown argument `{arg}`")),
                }
            }
        }
    }

    let target = url.ok_or("--url is required")?;
    let sessions = admins
        .checked_add(users)
        .and_then(|n| n.checked_add(anonymous))
        .unwrap_or(usize::MAX);
    if sessions == 0 {
        return Err("no sessions: give at least one of --admins, --users, --anonymous".into());
    }
    if sessions > MAX_SESSIONS {
        return Err(format!(
            "{sessions} sessions is more than the {MAX_SESSIONS} threads this tool allows"
        ));
    }
    if think_ms > MAX_THINK_MS {
        return Err(format!("--think-ms must be at most {MAX_THINK_MS}"));
    }
    if duration.is_zero() {
        return Err("--duration-s must be more than 0".into());
    }
    if timeout_ms == 0 {
        // A zero socket timeout is rejected by the OS, and would mean "no timeout" to a reader.
        return Err("--timeout-ms must be more than 0".into());
    }
    Ok(Parsed::Run(Box::new(Config {
        target,
        admins,
        users,
        anonymous,
        think: Duration::from_millis(think_ms),
        think_fixed,
        duration,
        warmup,
        paths,
        admin_cred,
        user_cred,
        timeout: Duration::from_millis(timeout_ms),
        json,
        honor_retry_after,
        seed,
    })))
}

fn no_value(flag: &str, inline: Option<String>) -> Result<bool, String> {
    match inline {
        None => Ok(true),
        Some(_) => Err(format!("{flag} takes no value")),
    }
}

fn parse_u64(flag: &str, value: &str) -> Result<u64, String> {
    value
        .parse()
        .map_err(|_| format!("{flag}: `{value}` is not a non-negative integer"))
}

fn parse_count(flag: &str, value: &str) -> Result<usize, String> {
    value
        .parse()
        .map_err(|_| format!("{flag}: `{value}` is not a non-negative integer"))
}

fn parse_secs(flag: &str, value: &str) -> Result<Duration, String> {
    let secs: f64 = value
        .parse()
        .map_err(|_| format!("{flag}: `{value}` is not a number of seconds"))?;
    // NaN and infinities fall outside the range too.
    if !(0.0..=1e7).contains(&secs) {
        return Err(format!("{flag}: `{value}` is out of range"));
    }
    Ok(Duration::from_secs_f64(secs))
}

fn parse_paths(value: &str) -> Result<Vec<String>, String> {
    let paths: Vec<String> = value.split(',').map(|p| p.trim().to_string()).collect();
    for p in &paths {
        // Paths go straight into the request line, so anything that could break it is refused.
        if !p.starts_with('/') || p.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return Err(format!(
                "--paths: `{p}` must start with / and contain no spaces or control characters"
            ));
        }
    }
    Ok(paths)
}

fn parse_cred(flag: &str, value: &str) -> Result<Credentials, String> {
    match value.split_once(':') {
        Some((user, password)) if !user.is_empty() => Ok(Credentials {
            user: user.to_string(),
            password: password.to_string(),
        }),
        _ => Err(format!("{flag}: expected USER:PASSWORD, got `{value}`")),
    }
}

/// Only plain `http://host[:port]` is accepted: TLS is out of scope, and a path in the URL would
/// be silently ignored in favour of `--paths`, so it is refused instead.
fn parse_url(url: &str) -> Result<Target, String> {
    let rest = match url.get(..7) {
        Some(scheme) if scheme.eq_ignore_ascii_case("http://") => &url[7..],
        _ => return Err(format!("--url: `{url}` must start with http://")),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    if !path.is_empty() && path != "/" {
        return Err(format!(
            "--url: give request paths with --paths, not in the URL (`{path}`)"
        ));
    }
    let bad = || format!("--url: cannot read host and port from `{authority}`");
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
            _ => return Err(format!("--url: bad port `{p}`")),
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
            Ok(Parsed::Run(c)) => *c,
            other => panic!("expected a run config for `{s}`, got {other:?}"),
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
    fn help_is_not_an_error() {
        assert_eq!(parse(args("--url http://x:1 --help"), 0), Ok(Parsed::Help));
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
            assert!(parse(args(bad), 0).is_err(), "`{bad}` should be refused");
        }
    }
}
