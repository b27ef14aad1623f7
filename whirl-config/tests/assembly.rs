//! The assembly end to end: every section parses and builds on a real runtime, errors point at
//! the right line and column, and a reload changes a running predicate without a restart.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Deserialize;
use whirl::prelude::*;
use whirl::{PostError, Runtime};
use whirl_config::{Assembly, ConfigError, Factories, Reloader};

/// Blocks the receiver until the other end of the socket is closed (an owned socket: the
/// message shares nothing with the test).
#[derive(Message)]
struct Hold(TcpStream);

#[derive(Message)]
struct Ping;

#[derive(Message)]
struct Tick;

#[process]
struct Counter {
    start: u64,
}

#[process]
impl Counter {
    #[handle]
    fn ping(&mut self, _: Ping, ctx: &mut Ctx<Self>) -> (u64, String) {
        self.start += 1;
        (self.start, ctx.group().name().to_string())
    }

    #[handle]
    fn tick(&mut self, _: Tick) {}

    #[handle]
    fn hold(&mut self, Hold(mut stream): Hold) {
        // Says it holds the worker, then waits for the test to let go.
        let _ = stream.write_all(b"h");
        let _ = stream.set_read_timeout(Some(Duration::from_secs(60)));
        let _ = stream.read(&mut [0; 1]);
    }
}

#[derive(Clone, Deserialize, Isolated)]
#[serde(deny_unknown_fields)]
struct CounterArgs {
    start: u64,
}

fn factories() -> Factories {
    Factories::new().process("counter", |a: CounterArgs| Counter { start: a.start })
}

const FULL: &str = r#"
[runtime]
threads = 1
budget = 32

[groups.web]
threads = { min = 1, max = 2 }
budget = 16
slow_turn_threshold = "200ms"
lifo_slot = false
scheduler = { principal_priority = { quota = [[2, 4], [1, 2]], unassigned = 0, inheritance = true } }
controller = { adaptive = { period = "100ms", idle_threshold = 0.5, queue_latency_threshold = "5ms", lock_latency_threshold = "1ms", queue_length_threshold = 50 } }
batching = { window = 4, step = 0.25, min_budget = 4, max_budget = 64 }
predicate = { all = [
    { session_consistent = { hold = "2s", max_sessions = 1000, ceiling = 4096, inner = { priority_thresholds = { max = 16, at_least = [[1, 64], [2, 1024]] } } } },
    { cost_budget = { budget = 64 } },
    { not = { any = [] } },
] }

[groups.pool]
threads = { min = 1, max = 3 }
scheduler = "fifo"
controller = { seda_pool = { period = "100ms", queue_threshold = 10, idle_timeout = "1s", margin = 0.1, max_random_drop = 1, smoothing = 0.5, seed = 7, thrashing_detection = false } }
predicate = { any = [{ token_bucket = { rate = 1000.0, depth = 100, charge_cost = true } }, { response_time = { target = "50ms" } }] }

[groups.batch]
threads = 1
scheduler = { cohort = { batch = 4 } }
controller = { fixed = { period = "1s" } }
cpu_budget = { share = 0.5, period = "100ms", cores = 1, virtual_ticks = true }
predicate = { utility_per_cost = { capacity = 100, lowest = 0.5, highest = 2.0 } }

[groups.classes]
threads = 1
scheduler = { stride = { tickets = [[0, 1], [1, 3]], unassigned = 0 } }
controller = { seda_batching = { period = "200ms" } }
predicate = { queue_length = { max = 1000 } }

[supervisors.app]
strategy = "one_for_all"
intensity = { max_restarts = 3, period = "5s" }
group = "web"
name = "app"
children = [
    { id = "first", process = "counter", args = { start = 10 }, group = "pool", name = "first", restart = "permanent", shutdown = "1s" },
    { id = "nested", supervisor = { strategy = "rest_for_one", children = [
        { id = "second", process = "counter", args = { start = 20 }, group = "batch", name = "second", restart = "transient", shutdown = "infinity" },
    ] } },
    { id = "third", process = "counter", args = { start = 30 }, name = "third", restart = "temporary", significant = false },
]
"#;

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn every_section_parses_and_builds() {
    let assembly = Assembly::parse(FULL, "full.toml").expect("the full file parses");
    assert_eq!(
        assembly.group_names().collect::<Vec<_>>(),
        ["batch", "classes", "pool", "web"]
    );
    let rt = assembly.runtime().expect("the runtime builds");
    let app = assembly.build(&rt, &factories()).expect("the file builds");
    let web = app.group("web").expect("the web group");
    assert_eq!(web.budget(), 16);
    assert_eq!(web.thread_range().max(), 2);
    assert!(app.group("pool").is_some() && app.group("classes").is_some());
    // The named processes run where the file put them, made by the factory from their args.
    for (name, start, group) in [
        ("first", 10, "pool"),
        ("second", 20, "batch"),
        ("third", 30, "web"),
    ] {
        let mut addr = None;
        wait_for(&format!("`{name}` registered"), || {
            addr = rt.whereis::<Counter>(name);
            addr.is_some()
        });
        let addr = addr.expect("registered");
        let (got, placed) = addr
            .request(Ping)
            .timeout(Duration::from_secs(30))
            .call()
            .expect("an answer");
        assert_eq!(got, start + 1, "{name} made from its args");
        // Without a group, a child runs in its supervisor's.
        assert_eq!(placed, group, "{name} placed in {group}");
    }
    assert!(rt
        .whereis::<whirl::supervision::Supervisor>("app")
        .is_some());
    let children = app
        .supervisor("app")
        .expect("the root")
        .which_children()
        .expect("its children");
    assert_eq!(children.len(), 3);
    rt.shutdown_timeout(Duration::from_secs(10));
}

fn error(text: &str) -> ConfigError {
    let err = Assembly::parse(text, "bad.toml").expect_err("the file is refused");
    // Built errors come later; parse errors must all carry a location.
    assert!(err.location().is_some(), "{err}");
    err
}

fn at(err: &ConfigError) -> (usize, usize) {
    let loc = err.location().expect("a location");
    (loc.line, loc.column)
}

#[test]
fn syntax_errors_name_line_and_column() {
    let err = error("[groups.web]\nthreads = 1\npredicate = { queue_length = { max = } }\n");
    assert!(matches!(err, ConfigError::Syntax { .. }), "{err:?}");
    assert_eq!(at(&err).0, 3, "{err}");
    assert!(err.to_string().starts_with("bad.toml:3:"), "{err}");
}

#[test]
fn wrong_types_name_line_and_column() {
    let err = error("[groups.web]\nthreads = 1\nbudget = \"lots\"\n");
    assert_eq!(at(&err), (3, 10), "{err}");
    let err = error("[groups.web]\n\nthreads = { min = 3, max = 1 }\n");
    assert_eq!(at(&err).0, 3, "{err}");
    let err = error("[groups.web]\npredicate = { response_time = { target = \"50\" } }\n");
    assert_eq!(at(&err).0, 2, "{err}");
    assert!(err.to_string().contains("duration"), "{err}");
}

#[test]
fn unknown_keys_name_line_and_column() {
    let err = error("[groups.web]\nthreads = 1\n\nthreadz = 2\n");
    assert_eq!(at(&err), (4, 1), "{err}");
    assert!(err.to_string().contains("threadz"), "{err}");
    let err = error("[groups.web]\npredicate = { all = [\n  { queue_length = { max = 1 } },\n  { queue_length = { mx = 1 } },\n] }\n");
    assert_eq!(at(&err).0, 4, "{err}");
    assert!(err.to_string().contains("mx"), "{err}");
    let err = error("[groups.web]\npredicate = { queue_lenght = { max = 1 } }\n");
    assert_eq!(at(&err).0, 2, "{err}");
    assert!(err.to_string().contains("queue_lenght"), "{err}");
    let err = error("[grups.web]\n");
    assert_eq!(at(&err).0, 1, "{err}");
}

#[test]
fn refused_values_name_line_and_column() {
    let err = error("[groups.web]\nthreads = 1\ncpu_budget = { share = 2.0, period = \"1s\" }\n");
    assert!(matches!(err, ConfigError::Invalid { .. }), "{err:?}");
    assert_eq!(at(&err), (3, 14), "{err}");
    let err = error("[supervisors.app]\nchildren = [\n  { id = \"x\" },\n]\n");
    assert_eq!(at(&err), (3, 3), "{err}");
    // A nested supervisor is placed and named by its child entry, not by itself.
    let err = error(
        "[supervisors.app]\nchildren = [\n  { id = \"x\", supervisor = { name = \"x\" } },\n]\n",
    );
    assert_eq!(at(&err), (3, 3), "{err}");
    assert!(err.to_string().contains("child entry"), "{err}");
}

/// Values that would make a group refuse every message, or that silently mean something
/// else (0 threads, a budget of 0), are refused where they are written.
#[test]
fn values_that_change_meaning_or_refuse_everything_are_refused() {
    let err = error("[runtime]\nthreads = 0\n");
    assert!(matches!(err, ConfigError::Syntax { .. }), "{err:?}");
    assert_eq!(at(&err), (2, 11), "{err}");
    assert!(err.to_string().contains("at least 1 thread"), "{err}");
    let err = error("[runtime]\nbudget = 0\n");
    assert_eq!(at(&err), (2, 10), "{err}");
    let err = error("[groups.web]\nthreads = 1\nbudget = 0\n");
    assert_eq!(at(&err), (3, 10), "{err}");
    let err = error("[groups.web]\nthreads = 0\n");
    assert_eq!(at(&err), (2, 11), "{err}");
    for predicate in [
        "{ queue_length = { max = 0 } }",
        "{ cost_budget = { budget = 0 } }",
        "{ token_bucket = { rate = 10.0, depth = 0 } }",
        "{ priority_thresholds = { max = 0 } }",
        "{ overload = { target = \"1s\", inner = { queue_length = { max = 0 } } } }",
    ] {
        let err = error(&format!(
            "[groups.sockets]\nthreads = 1\npredicate = {predicate}\n"
        ));
        assert!(matches!(err, ConfigError::Invalid { .. }), "{err:?}");
        assert_eq!(at(&err), (3, 13), "{predicate}: {err}");
        assert!(err.to_string().contains("refuses every message"), "{err}");
    }
    // A threshold of 0 for the lowest priority only is a choice, not a mistake.
    Assembly::parse(
        "[groups.web]\npredicate = { priority_thresholds = { max = 0, at_least = [[1, 8]] } }\n",
        "ok.toml",
    )
    .expect("anonymous refused, users admitted");
}

#[test]
fn unknown_groups_name_line_and_column() {
    let text = "[groups.web]\nthreads = 1\n[supervisors.app]\nchildren = [\n  { id = \"c\", process = \"counter\", group = \"wbe\" },\n]\n";
    let err = error(text);
    assert!(
        matches!(err, ConfigError::UnknownGroup { ref name, .. } if name == "wbe"),
        "{err:?}"
    );
    assert_eq!(at(&err), (5, 44), "{err}");
    let err = error("[supervisors.app]\ngroup = \"nowhere\"\n");
    assert_eq!(at(&err), (2, 9), "{err}");
}

#[test]
fn unknown_process_types_name_line_and_column() {
    let text = "[supervisors.app]\nchildren = [\n  { id = \"c\", process = \"countr\" },\n]\n";
    let assembly = Assembly::parse(text, "app.toml").expect("parses: types are checked at build");
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let err = assembly.build(&rt, &factories()).expect_err("unknown type");
    assert!(
        matches!(err, ConfigError::UnknownProcess { ref name, .. } if name == "countr"),
        "{err:?}"
    );
    assert_eq!(at(&err), (3, 25), "{err}");
    assert!(err.to_string().contains("registered: counter"), "{err}");
    // Arguments the factory cannot take point at the arguments.
    let text = "[supervisors.app]\nchildren = [\n  { id = \"c\", process = \"counter\",\n    args = { begin = 1 } },\n]\n";
    let assembly = Assembly::parse(text, "app.toml").expect("parses");
    let err = assembly.build(&rt, &factories()).expect_err("bad args");
    assert_eq!(at(&err), (4, 12), "{err}");
    assert!(err.to_string().contains("begin"), "{err}");
    rt.shutdown_timeout(Duration::from_secs(10));
}

const RELOADABLE: &str = "[groups.web]\nthreads = 1\npredicate = { queue_length = { max = 1000 } }\ncontroller = { fixed = { period = \"1s\" } }\n";

/// Posts to a process blocked in a handler until the group's predicate refuses one; the
/// number admitted. The message being handled counts as queued, so a limit of `max` admits
/// `max - 1` more.
fn admitted_until_rejected(rt: &Runtime, group: &whirl::Group, limit: usize) -> usize {
    let addr = rt.spawner().group(group).spawn(Counter { start: 0 });
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback listener");
    let release =
        TcpStream::connect(listener.local_addr().expect("its address")).expect("connected");
    let (held, _) = listener.accept().expect("accepted");
    addr.post(Hold(held))
        .expect("the first message is admitted");
    let mut release = release;
    release
        .set_read_timeout(Some(Duration::from_secs(60)))
        .expect("a timeout");
    let mut byte = [0; 1];
    release
        .read_exact(&mut byte)
        .expect("the process holds its worker");
    let mut admitted = 0;
    while admitted < limit {
        match addr.post(Tick) {
            Ok(()) => admitted += 1,
            Err(PostError::Rejected(_)) => break,
            Err(e) => panic!("unexpected {e:?}"),
        }
    }
    drop(release);
    wait_for("the group drains", || group.counts().queued() == 0);
    admitted
}

#[test]
fn reload_lowers_a_queue_limit_without_a_restart() {
    let assembly = Assembly::parse(RELOADABLE, "app.toml").expect("parses");
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let app = assembly.build(&rt, &Factories::new()).expect("builds");
    let web = app.group("web").expect("web").clone();
    assert_eq!(
        admitted_until_rejected(&rt, &web, 100),
        100,
        "max 1000: nothing refused"
    );

    let lowered = RELOADABLE.replace("max = 1000", "max = 5");
    let report = app.reload(&Assembly::parse(&lowered, "app.toml").expect("parses"));
    assert_eq!(report.applied, ["groups.web.predicate.max"]);
    assert!(report.needs_restart.is_empty(), "{report:?}");
    assert_eq!(
        admitted_until_rejected(&rt, &web, 100),
        4,
        "max 5 now refuses the sixth"
    );
    rt.shutdown_timeout(Duration::from_secs(10));
}

#[test]
fn reload_reports_structural_changes_and_leaves_them() {
    let assembly = Assembly::parse(RELOADABLE, "app.toml").expect("parses");
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let app = assembly.build(&rt, &Factories::new()).expect("builds");
    let web = app.group("web").expect("web");
    let names: Vec<&str> = web.stats().controllers.iter().map(|c| c.name).collect();
    assert_eq!(names, ["fixed"]);
    let changed = RELOADABLE
        .replace("threads = 1", "threads = 2")
        .replace(
            "queue_length = { max = 1000 }",
            "token_bucket = { rate = 1.0, depth = 1 }",
        )
        .replace(
            "fixed = { period = \"1s\" }",
            "seda_pool = { period = \"1s\" }",
        )
        .replace("threads = 2\n", "threads = 2\nbudget = 4\n")
        + "[groups.more]\nthreads = 1\n";
    let report = app.reload(&Assembly::parse(&changed, "app.toml").expect("parses"));
    let paths: Vec<&str> = report
        .needs_restart
        .iter()
        .map(|n| n.path.as_str())
        .collect();
    assert_eq!(
        paths,
        ["groups.more", "groups.web.threads", "groups.web.predicate"]
    );
    assert_eq!(report.needs_restart[0].at.as_ref().map(|l| l.line), Some(6));
    assert!(report.needs_restart[1]
        .to_string()
        .contains("needs a restart"));
    // The budget and the controller are applied (a new controller in its slot).
    assert_eq!(
        report.applied,
        ["groups.web.budget", "groups.web.controller"]
    );
    let web = app.group("web").expect("web");
    assert_eq!(web.budget(), 4);
    let names: Vec<&str> = web.stats().controllers.iter().map(|c| c.name).collect();
    assert_eq!(names, ["seda-thread-pool"]);
    assert_eq!(web.thread_range().max(), 1, "threads untouched");
    assert!(rt.group_named("more").is_none(), "no group added");
    // The predicate is still the queue limit: nothing is refused.
    assert_eq!(admitted_until_rejected(&rt, web, 50), 50);
    rt.shutdown_timeout(Duration::from_secs(10));
}

#[test]
fn the_reloader_applies_edits_to_the_file() {
    let dir = std::env::temp_dir().join(format!("whirl-config-reload-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let path = dir.join("app.toml");
    std::fs::write(&path, RELOADABLE).expect("written");
    let assembly = Assembly::from_file(&path).expect("parses");
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let app = Arc::new(assembly.build(&rt, &Factories::new()).expect("builds"));
    let (tx, rx) = mpsc::channel();
    let reloader = Reloader::watch(
        Arc::clone(&app),
        &path,
        &assembly,
        Duration::from_millis(10),
        move |outcome| {
            let _ = tx.send(outcome.map_err(|e| e.to_string()));
        },
    )
    .expect("the reloader starts");

    std::fs::write(&path, RELOADABLE.replace("max = 1000", "max = 3")).expect("edited");
    let report = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("a reload")
        .expect("applied");
    assert_eq!(report.applied, ["groups.web.predicate.max"]);
    let web = app.group("web").expect("web").clone();
    assert_eq!(admitted_until_rejected(&rt, &web, 100), 2);

    // A broken edit is reported with its line and changes nothing.
    std::fs::write(&path, "[groups.web]\nthreads = 1\npredicate = {\n").expect("edited");
    let err = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("a reload")
        .expect_err("broken");
    assert!(err.contains(":3:") || err.contains(":4:"), "{err}");
    assert_eq!(admitted_until_rejected(&rt, &web, 100), 2);
    reloader.stop();
    let _ = std::fs::remove_dir_all(&dir);
    rt.shutdown_timeout(Duration::from_secs(10));
}

/// The example file of the crate documentation, extracted from `lib.rs`.
fn documented_example() -> String {
    let lib = include_str!("../src/lib.rs");
    let start = lib.find("//! ```toml\n").expect("the example") + "//! ```toml\n".len();
    let end = start + lib[start..].find("//! ```\n").expect("its end");
    lib[start..end]
        .lines()
        .map(|line| {
            line.strip_prefix("//!")
                .unwrap_or(line)
                .trim_start_matches(' ')
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[derive(Clone, Deserialize, Isolated)]
struct NoArgs {}

#[test]
fn the_documented_example_builds() {
    let text = documented_example();
    let assembly = Assembly::parse(&text, "lib.rs example").unwrap_or_else(|e| panic!("{e}"));
    let rt = assembly.runtime().expect("the runtime");
    let factories = Factories::new()
        .process("cache", |a: CounterArgs| Counter { start: a.start })
        .process("worker", |_: NoArgs| Counter { start: 0 });
    // The example's cache takes a capacity: the error names it at its place.
    let err = assembly
        .build(&rt, &factories)
        .expect_err("capacity is not a start");
    assert!(err.to_string().contains("capacity"), "{err}");
    #[derive(Clone, Deserialize, Isolated)]
    struct CacheArgs {
        capacity: u64,
    }
    let factories = factories.process("cache", |a: CacheArgs| Counter { start: a.capacity });
    let app = assembly
        .build(&rt, &factories)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(app.group("web").is_some() && app.group("batch").is_some());
    let mut cache = None;
    wait_for("the cache registered", || {
        cache = rt.whereis::<Counter>("cache");
        cache.is_some()
    });
    let (n, group) = cache
        .expect("registered")
        .request(Ping)
        .timeout(Duration::from_secs(30))
        .call()
        .expect("an answer");
    assert_eq!((n, group.as_str()), (101, "web"));
    rt.shutdown_timeout(Duration::from_secs(10));
}

const OVERLOAD: &str = r#"
[groups.web]
threads = 1
predicate = { overload = { target = "50ms", window = 10, inner = { session_consistent = { hold = "2s", inner = { priority_thresholds = { max = 2, at_least = [[2, 1024]] } } } } } }
"#;

#[test]
fn overload_gates_its_inner_predicate_and_reloads_it() {
    let assembly = Assembly::parse(OVERLOAD, "app.toml").expect("parses");
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let app = assembly.build(&rt, &Factories::new()).expect("builds");
    let web = app.group("web").expect("web").clone();
    // The group keeps up (nothing measured over target): a queue far past the threshold of
    // 2 is admitted.
    assert_eq!(admitted_until_rejected(&rt, &web, 100), 100);
    let raised = OVERLOAD.replace("max = 2,", "max = 4,");
    let report = app.reload(&Assembly::parse(&raised, "app.toml").expect("parses"));
    assert_eq!(
        report.applied,
        ["groups.web.predicate.inner.inner.thresholds"]
    );
    assert!(report.needs_restart.is_empty(), "{report:?}");
    let retargeted = raised.replace("50ms", "80ms");
    let report = app.reload(&Assembly::parse(&retargeted, "app.toml").expect("parses"));
    assert_eq!(report.needs_restart.len(), 1, "{report:?}");
    assert_eq!(report.needs_restart[0].path, "groups.web.predicate.target");
    rt.shutdown_timeout(Duration::from_secs(10));
}

#[test]
fn overload_errors_name_line_and_column() {
    let err = error("[groups.web]\nthreads = 1\npredicate = { overload = { target = \"0ms\", inner = { queue_length = { max = 1 } } } }\n");
    assert!(matches!(err, ConfigError::Invalid { .. }), "{err:?}");
    assert_eq!(at(&err).0, 3, "{err}");
    assert!(err.to_string().contains("positive"), "{err}");
    let err = error("[groups.web]\npredicate = { overload = {\n  target = \"50ms\",\n  inner = { queue_length = { mx = 1 } } } }\n");
    assert_eq!(at(&err).0, 4, "{err}");
    assert!(err.to_string().contains("mx"), "{err}");
    let err = error("[groups.web]\npredicate = { overload = { target = \"50ms\", window = 0, inner = { queue_length = { max = 1 } } } }\n");
    assert!(err.to_string().contains("window"), "{err}");
}
