//! `async fn` handlers awaiting real I/O: a process in front of an embedded SQLite database
//! (`tokio-rusqlite`), and processes fetching pages over HTTP (`reqwest`) from the IRIS server
//! (the `iris_http` binary of the `iris` example package), started as a child process on a free
//! loopback port.
//!
//! What it shows:
//!
//! - A handler's return value is the reply: `async fn find(..) -> Result<Option<User>,
//!   Failure>` answers `addr.ask(Find { id }).await` with `Option<User>`; an `Err` (a SQL
//!   error, a broken connection) would fail the process instead of answering.
//! - While an async handler awaits, its process is parked: it handles nothing else, so its
//!   state needs no lock and its messages are handled in order (the row ids of the users
//!   added follow the order of the posts), while its worker thread runs other processes. The
//!   runtime here has a single worker thread, and the three `Fetcher` processes still have
//!   their requests in flight at the same time.
//! - With whirl's `tokio` feature the runtime owns a tokio runtime, so the futures of
//!   tokio-based clients (reqwest here) are awaited directly inside handlers.
//! - Clients of external systems live in process state as `SharedClient`, which says why
//!   they may be shared.
//! - The runtime's accounting at the end: every message posted was handled, rejected or
//!   dead-lettered, and the graceful shutdown is clean.
//!
//! ```text
//! cargo run --release -p async-handlers --bin async_demo
//! ```
//!
//! The demo looks for the `iris_http` executable in `$WHIRL_IRIS_HTTP`, then next to its own
//! executable; under `cargo run` it builds it if it is missing. The database is a temporary
//! file, removed at the end. The exit code is non-zero if any check failed.

use std::collections::HashMap;
use std::error::Error;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio_rusqlite::rusqlite::OptionalExtension;
use whirl::prelude::*;
use whirl::SharedClient;

/// The directory `iris_http` serves under `/files/`.
const IRIS_ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../iris/iris_root");
/// Users added to the database.
const USERS: i64 = 50;
/// Finds asked at once; they cycle over ids `1..=USERS + 10`, so some find nobody.
const FINDS: i64 = 1_000;
/// How long `iris_http` may take to accept connections.
const STARTUP_DEADLINE: Duration = Duration::from_secs(20);
/// The limit on any one answer the demo waits for.
const PATIENCE: Duration = Duration::from_secs(30);

type Outcome<T> = Result<T, Box<dyn Error>>;

// ----------------------------------------------------------------------------------------
// The Users process: SQLite through tokio-rusqlite.
// ----------------------------------------------------------------------------------------

/// Creates the `users` table.
#[derive(Message)]
struct CreateSchema;

/// Adds a user; answered with the new row id.
#[derive(Message)]
struct AddUser {
    name: String,
    email: String,
}

/// Looks a user up by id; answered with the user, or `None`.
#[derive(Message)]
struct Find {
    id: i64,
}

/// A row of the `users` table. A reply crosses a process boundary, so it is a `Message`
/// (owned data only).
#[derive(Message, Debug, Clone)]
struct User {
    id: i64,
    name: String,
    email: String,
}

/// Asks the Users process what it did.
#[derive(Message)]
struct GetStats;

/// What the Users process did.
#[derive(Message, Debug, Clone)]
struct UsersStats {
    added: u64,
    found: u64,
    missing: u64,
    /// The most handlers of this process ever in flight at once: 1, as a process is
    /// sequential even while it awaits.
    max_in_flight: u64,
    /// Time its handlers spent awaiting SQLite's connection thread.
    awaiting: Duration,
}

/// Owns the database: every query goes through this process.
#[process]
struct Users {
    /// tokio-rusqlite runs the SQLite connection on its own thread; the handle sends it
    /// closures over a channel and awaits their results.
    db: SharedClient<tokio_rusqlite::Connection>,
    stats: UsersStats,
    in_flight: u64,
}

#[process]
impl Users {
    #[handle]
    async fn create_schema(&mut self, _: CreateSchema) -> Result<(), Failure> {
        self.query(|conn| {
            conn.execute_batch(
                "CREATE TABLE users (
                     id    INTEGER PRIMARY KEY,
                     name  TEXT NOT NULL UNIQUE,
                     email TEXT NOT NULL
                 )",
            )
        })
        .await
    }

    #[handle]
    async fn add_user(&mut self, AddUser { name, email }: AddUser) -> Result<i64, Failure> {
        let id = self
            .query(move |conn| {
                conn.execute(
                    "INSERT INTO users (name, email) VALUES (?1, ?2)",
                    (&name, &email),
                )?;
                Ok(conn.last_insert_rowid())
            })
            .await?;
        self.stats.added += 1;
        Ok(id)
    }

    #[handle]
    async fn find(&mut self, Find { id }: Find) -> Result<Option<User>, Failure> {
        let user = self
            .query(move |conn| {
                conn.prepare_cached("SELECT id, name, email FROM users WHERE id = ?1")?
                    .query_row([id], |row| {
                        Ok(User {
                            id: row.get(0)?,
                            name: row.get(1)?,
                            email: row.get(2)?,
                        })
                    })
                    .optional()
            })
            .await?;
        match user {
            Some(_) => self.stats.found += 1,
            None => self.stats.missing += 1,
        }
        Ok(user)
    }

    #[handle]
    fn stats(&mut self, _: GetStats) -> UsersStats {
        self.stats.clone()
    }
}

impl Users {
    /// Runs `work` on SQLite's connection thread and awaits its result: the process is parked
    /// meanwhile, its worker free for other processes.
    async fn query<T, F>(&mut self, work: F) -> Result<T, Failure>
    where
        F: FnOnce(&mut rusqlite::Connection) -> rusqlite::Result<T> + Send + 'static,
        T: Send + 'static,
    {
        self.in_flight += 1;
        self.stats.max_in_flight = self.stats.max_in_flight.max(self.in_flight);
        let started = Instant::now();
        let result = self.db.call(work).await;
        self.stats.awaiting += started.elapsed();
        self.in_flight -= 1;
        Ok(result?)
    }
}

// ----------------------------------------------------------------------------------------
// The Fetcher processes: HTTP through reqwest.
// ----------------------------------------------------------------------------------------

/// Fetches `path` from the server; answered with what came back.
#[derive(Message)]
struct Fetch {
    path: String,
}

/// The outcome of a fetch.
#[derive(Message, Debug, Clone)]
struct Fetched {
    path: String,
    fetcher: usize,
    status: u16,
    bytes: usize,
    took: Duration,
}

/// Fetches pages from one server.
#[process]
struct Fetcher {
    number: usize,
    base: String,
    http: SharedClient<reqwest::Client>,
}

#[process]
impl Fetcher {
    /// A connection refused or a broken response is an `Err`: it fails this process, and
    /// the asker gets no reply. A 404 is an answer like any other.
    #[handle]
    async fn fetch(&mut self, Fetch { path }: Fetch) -> Result<Fetched, Failure> {
        let started = Instant::now();
        let response = self.http.get(format!("{}{path}", self.base)).send().await?;
        let status = response.status().as_u16();
        let body = response.bytes().await?;
        Ok(Fetched {
            path,
            fetcher: self.number,
            status,
            bytes: body.len(),
            took: started.elapsed(),
        })
    }
}

// ----------------------------------------------------------------------------------------
// The demo.
// ----------------------------------------------------------------------------------------

fn main() -> ExitCode {
    match run() {
        Ok(problems) if problems.is_empty() => {
            println!("async_demo: all checks passed");
            ExitCode::SUCCESS
        }
        Ok(problems) => {
            for problem in &problems {
                eprintln!("async_demo: FAILED: {problem}");
            }
            eprintln!("async_demo: {} check(s) failed", problems.len());
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("async_demo: error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the demo; returns the checks that failed, or the error that stopped it.
fn run() -> Outcome<Vec<String>> {
    let mut problems = Vec::new();
    // Dropped last: the database file goes once everything else is shut down.
    let db_file = TempFile::new()?;
    // Drives the asks from `main`; any executor would do.
    let driver = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a tokio runtime for main: {e}"))?;
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    if rt.tokio_handle().is_none() {
        return Err("the whirl runtime could not start its tokio runtime".into());
    }
    println!(
        "a whirl runtime with {} worker thread (and its own tokio runtime for I/O)",
        rt.default_group().threads()
    );

    // 1. SQLite.
    let conn = driver
        .block_on(tokio_rusqlite::Connection::open(&db_file.0))
        .map_err(|e| format!("cannot open {}: {e}", db_file.0.display()))?;
    println!("users: SQLite database {}", db_file.0.display());
    let users = rt.spawn(Users {
        db: SharedClient::new(
            conn.clone(),
            "a handle on the SQLite connection's own thread; thread-safe, used by this process only",
        ),
        stats: UsersStats {
            added: 0,
            found: 0,
            missing: 0,
            max_in_flight: 0,
            awaiting: Duration::ZERO,
        },
        in_flight: 0,
    });
    users
        .request(CreateSchema)
        .timeout(PATIENCE)
        .call()
        .map_err(|e| format!("creating the table: {e}"))?;
    users_phase(&driver, &users, &mut problems)?;

    // 2. HTTP.
    let iris = Iris::start()?;
    fetch_phase(&rt, &driver, &iris, &mut problems)?;
    drop(iris);

    // 3. Accounting and shutdown.
    rt.block_until_idle();
    let counts = rt.counts();
    println!(
        "accounting: posted {} = handled {} + rejected {} + dead letters {} + queued {}",
        counts.posted,
        counts.handled,
        counts.rejected,
        counts.dead_lettered,
        counts.queued()
    );
    if counts.posted != counts.handled + counts.rejected + counts.dead_lettered {
        problems.push("the message accounting does not add up".into());
    }
    let report = rt.shutdown_graceful();
    println!("{report}");
    if !report.is_clean() {
        problems.push(format!("the shutdown was not clean: {report}"));
    }
    // The process held the other handle; closing this one closes the connection.
    if let Err(e) = driver.block_on(conn.close()) {
        problems.push(format!("closing the database: {e}"));
    }
    Ok(problems)
}

/// Adds users, then asks a thousand finds at once.
fn users_phase(
    driver: &tokio::runtime::Runtime,
    users: &Addr<Users>,
    problems: &mut Vec<String>,
) -> Outcome<()> {
    const FIRST: [&str; 10] = [
        "ada", "grace", "alan", "barbara", "edsger", "frances", "john", "margaret", "niklaus",
        "radia",
    ];
    let names: Vec<String> = (0..USERS as usize)
        .map(|n| format!("{}{}", FIRST[n % FIRST.len()], n / FIRST.len() + 1))
        .collect();
    // All the adds are posted before the first is answered; the process takes them one by
    // one, so the row ids follow the posting order.
    let adds: Vec<_> = names
        .iter()
        .map(|name| {
            users.ask(AddUser {
                name: name.clone(),
                email: format!("{name}@example.com"),
            })
        })
        .collect();
    let ids = driver.block_on(async {
        let mut ids = Vec::with_capacity(adds.len());
        for add in adds {
            ids.push(await_answer(add).await?);
        }
        Ok::<_, String>(ids)
    })?;
    let in_order = ids.iter().copied().eq(1..=USERS);
    println!(
        "users: added {} users through AddUser, row ids {}..={} ({})",
        ids.len(),
        ids.first().copied().unwrap_or_default(),
        ids.last().copied().unwrap_or_default(),
        if in_order {
            "in posting order"
        } else {
            "NOT in posting order"
        }
    );
    if !in_order {
        problems.push(format!("row ids out of posting order: {ids:?}"));
    }
    let expected: HashMap<i64, &str> = ids
        .iter()
        .copied()
        .zip(names.iter().map(String::as_str))
        .collect();

    let before = users
        .request(GetStats)
        .timeout(PATIENCE)
        .call()
        .map_err(|e| format!("asking the Users process for its statistics: {e}"))?;
    println!("users: {FINDS} finds asked at once from tokio tasks...");
    let started = Instant::now();
    let answers = driver.block_on(async {
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..FINDS {
            let id = i % (USERS + 10) + 1;
            let ask = users.ask(Find { id });
            tasks.spawn(async move { (id, await_answer(ask).await) });
        }
        tasks.join_all().await
    });
    let elapsed = started.elapsed();
    let (mut found, mut missing) = (0u64, 0u64);
    for (id, answer) in answers {
        match (answer, expected.get(&id)) {
            (Ok(Some(user)), Some(name))
                if user.id == id
                    && user.name == *name
                    && user.email == format!("{name}@example.com") =>
            {
                found += 1
            }
            (Ok(None), None) => missing += 1,
            (Ok(other), name) => {
                problems.push(format!("find {id}: expected {name:?}, got {other:?}"));
            }
            (Err(e), _) => problems.push(format!("find {id}: {e}")),
        }
    }
    let per_second = (found + missing) as f64 / elapsed.as_secs_f64().max(1e-9);
    println!(
        "  answered {} ({found} found, {missing} nobody) in {elapsed:.1?} ({per_second:.0} finds/s)",
        found + missing,
    );
    let stats = users
        .request(GetStats)
        .timeout(PATIENCE)
        .call()
        .map_err(|e| format!("asking the Users process for its statistics: {e}"))?;
    println!(
        "  the Users process handled them one at a time (at most {} handler in flight), \
         {:.1?} of it awaiting SQLite with its worker free for other processes",
        stats.max_in_flight,
        stats.awaiting.saturating_sub(before.awaiting)
    );
    let expected_missing = (0..FINDS).filter(|i| i % (USERS + 10) >= USERS).count() as u64;
    if (found, missing) != (FINDS as u64 - expected_missing, expected_missing) {
        problems.push(format!(
            "{found} found and {missing} missing, expected {} and {expected_missing}",
            FINDS as u64 - expected_missing
        ));
    }
    if stats.max_in_flight != 1 {
        problems.push(format!(
            "{} handlers of one process in flight at once",
            stats.max_in_flight
        ));
    }
    if (stats.added, stats.found, stats.missing) != (USERS as u64, found, missing) {
        problems.push(format!("the Users process counted {stats:?}"));
    }
    Ok(())
}

/// Fetches a few paths at once from several Fetcher processes.
fn fetch_phase(
    rt: &Runtime,
    driver: &tokio::runtime::Runtime,
    iris: &Iris,
    problems: &mut Vec<String>,
) -> Outcome<()> {
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(PATIENCE)
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
    let base = format!("http://{}", iris.addr);
    let fetchers: Vec<Addr<Fetcher>> = (1..=3)
        .map(|number| {
            rt.spawn(Fetcher {
                number,
                base: base.clone(),
                http: SharedClient::new(
                    http.clone(),
                    "reqwest's client is a connection pool behind an Arc, made to be shared",
                ),
            })
        })
        .collect();
    // (path, the file it serves, if any)
    let wanted = [
        ("/files/index.html", Some("index.html")),
        ("/files/map.svg", Some("map.svg")),
        ("/files/map.low.svg", Some("map.low.svg")),
        ("/files/no-such-file.html", None),
        ("/files/index.html", Some("index.html")),
        ("/files/map.svg", Some("map.svg")),
    ];
    println!(
        "fetch: {} GETs at once from {} Fetcher processes to iris_http at {base}",
        wanted.len(),
        fetchers.len()
    );
    let started = Instant::now();
    let asks: Vec<_> = wanted
        .iter()
        .enumerate()
        .map(|(i, (path, _))| {
            fetchers[i % fetchers.len()].ask(Fetch {
                path: (*path).to_owned(),
            })
        })
        .collect();
    let answers = driver.block_on(async {
        let mut answers = Vec::with_capacity(asks.len());
        for ask in asks {
            answers.push(await_answer(ask).await);
        }
        answers
    });
    let elapsed = started.elapsed();
    let mut own_times = Duration::ZERO;
    for ((path, file), answer) in wanted.iter().zip(answers) {
        let fetched = match answer {
            Ok(fetched) => fetched,
            Err(e) => {
                println!("  GET {path:<26} failed: {e}");
                problems.push(format!("GET {path}: {e}"));
                continue;
            }
        };
        own_times += fetched.took;
        println!(
            "  fetcher {} GET {:<26} -> {} {:>6} bytes in {:.1?}",
            fetched.fetcher, fetched.path, fetched.status, fetched.bytes, fetched.took
        );
        let expected = match file {
            Some(file) => {
                let size = std::fs::metadata(Path::new(IRIS_ROOT).join(file))
                    .map_err(|e| format!("{IRIS_ROOT}/{file}: {e}"))?
                    .len();
                (200, Some(size))
            }
            None => (404, None),
        };
        let got = (fetched.status, expected.1.map(|_| fetched.bytes as u64));
        if got != expected {
            problems.push(format!(
                "GET {path}: status {} with {} bytes, expected {expected:?}",
                fetched.status, fetched.bytes
            ));
        }
    }
    println!(
        "  all answered in {elapsed:.1?}; the fetches' own times add up to {own_times:.1?}{}",
        if own_times > elapsed {
            " (they overlapped, on one worker thread)"
        } else {
            ""
        }
    );
    Ok(())
}

/// Awaits an ask, turning a missing answer into a message.
async fn await_answer<T, M>(
    ask: impl std::future::Future<Output = Result<T, CallError<M>>>,
) -> Result<T, String> {
    match tokio::time::timeout(PATIENCE, ask).await {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(e)) => Err(format!("no answer: {e}")),
        Err(_) => Err(format!("no answer within {PATIENCE:?}")),
    }
}

// ----------------------------------------------------------------------------------------
// The iris_http child process and the temporary database file.
// ----------------------------------------------------------------------------------------

/// The running `iris_http`, killed when dropped (on error paths too).
struct Iris {
    child: Child,
    addr: SocketAddr,
}

impl Iris {
    /// Starts `iris_http` on a free loopback port and waits until it accepts connections.
    fn start() -> Outcome<Iris> {
        let exe = iris_executable()?;
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .and_then(|listener| listener.local_addr())
            .map_err(|e| format!("cannot find a free port: {e}"))?
            .port();
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let child = Command::new(&exe)
            .args([
                "--bind",
                "127.0.0.1",
                "--port",
                &port.to_string(),
                "--root",
                IRIS_ROOT,
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
        let mut iris = Iris { child, addr };
        let started = Instant::now();
        loop {
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                break;
            }
            if let Ok(Some(status)) = iris.child.try_wait() {
                return Err(format!(
                    "{} exited before accepting connections: {status}",
                    exe.display()
                )
                .into());
            }
            if started.elapsed() > STARTUP_DEADLINE {
                return Err(format!(
                    "{} did not accept connections on {addr} within {STARTUP_DEADLINE:?}",
                    exe.display()
                )
                .into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        println!(
            "iris_http: started {} (pid {}), serving {IRIS_ROOT} on {addr} after {:.1?}",
            exe.display(),
            iris.child.id(),
            started.elapsed()
        );
        Ok(iris)
    }
}

impl Drop for Iris {
    fn drop(&mut self) {
        let _ = self.child.kill();
        match self.child.wait() {
            Ok(_) => println!("iris_http: stopped (pid {})", self.child.id()),
            Err(e) => eprintln!("iris_http: could not wait for pid {}: {e}", self.child.id()),
        }
    }
}

/// `$WHIRL_IRIS_HTTP`, or `iris_http` next to this executable, built with cargo if it is
/// missing and this runs under `cargo run`.
fn iris_executable() -> Outcome<PathBuf> {
    if let Some(path) = std::env::var_os("WHIRL_IRIS_HTTP") {
        let path = PathBuf::from(path);
        return match path.is_file() {
            true => Ok(path),
            false => Err(format!("WHIRL_IRIS_HTTP={}: no such file", path.display()).into()),
        };
    }
    let here =
        std::env::current_exe().map_err(|e| format!("cannot locate this executable: {e}"))?;
    let dir = here
        .parent()
        .ok_or("this executable has no parent directory")?;
    let exe = dir.join(format!("iris_http{}", std::env::consts::EXE_SUFFIX));
    if exe.is_file() {
        return Ok(exe);
    }
    let Some(cargo) = std::env::var_os("CARGO") else {
        return Err(format!(
            "{} not found: build it (cargo build --release -p iris --bin iris_http) or \
             set WHIRL_IRIS_HTTP to its path",
            exe.display()
        )
        .into());
    };
    let mut build = Command::new(cargo);
    build.args(["build", "-p", "iris", "--bin", "iris_http"]);
    // The same profile as this executable, so that it lands next to it.
    if !cfg!(debug_assertions) {
        build.arg("--release");
    }
    println!(
        "iris_http: not found next to {}; building it: cargo {}",
        here.display(),
        build
            .get_args()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ")
    );
    let status = build
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        return Err(format!("building iris_http failed: {status}").into());
    }
    match exe.is_file() {
        true => Ok(exe),
        false => Err(format!("{} still not found after building it", exe.display()).into()),
    }
}

/// A file name in the temporary directory, unique to this run; the file (and SQLite's
/// journal beside it) is removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn new() -> Outcome<TempFile> {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_err(|e| format!("the clock is before 1970: {e}"))?
            .as_nanos();
        let name = format!("whirl-async-demo-{}-{nanos}.sqlite3", std::process::id());
        Ok(TempFile(std::env::temp_dir().join(name)))
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        for suffix in ["", "-journal", "-wal", "-shm"] {
            let mut path = self.0.clone().into_os_string();
            path.push(suffix);
            let _ = std::fs::remove_file(path);
        }
    }
}
