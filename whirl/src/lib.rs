//! whirl: isolated sequential processes, asynchronous messages, groups with their own
//! workers and admission control, for internet services that must stay up under overload and
//! faults.
//!
//! A whirl program is a set of *processes*. Each owns its state and handles its messages one
//! at a time, in order, so it needs no locks. Processes talk only by *posting messages*, which
//! never blocks. Processes run in *groups*, each with its own worker threads and an admission
//! predicate that turns messages away when the group is overloaded, handing them back to the
//! sender. And the compiler checks that no two processes can reach the same mutable memory.
//!
//! # Features
//!
//! * `prometheus`: Prometheus exposition through `prometheus-client` (`whirl::prometheus`): collectors
//!   read at scrape time, with real histograms, per class of principal counts, `process_*` and
//!   `whirl_build_info`, in OpenMetrics or the classic text format. Off by default.
//! * `metrics`: the statistics recorded through the [`metrics`](https://docs.rs/metrics)
//!   facade (`Runtime::record_metrics`, or `Runtime::export_metrics` on a thread of its own):
//!   per group message counters, queue length, threads, recent latency quantiles, per class
//!   of principal counts, supervisor restarts, all named `whirl_*`. Read from the snapshots,
//!   never on the message path. Off by default.
//! * `net`: non-blocking sockets as processes ([`net`]: an `Acceptor` and `SocketConnection`
//!   on one poll per runtime that the shared workers wait in, mio underneath). Off by default.
//! * `tls`: TLS server connections on the socket layer with rustls (ring provider):
//!   [`net::tls`](crate::net) puts the TLS state inside a `SocketConnection`, whose owner still
//!   sends and receives plaintext; handshakes run on behalf of the client address's principal
//!   and pass the group's admission predicate first. Implies `net`. Off by default.
//! * `serde`: `serde::Serialize` for the statistics snapshots ([`control::RuntimeStats`] and
//!   what it holds) and the events ([`ExitReason`], [`Failure`], [`Down`], [`DeadLetter`],
//!   [`failures::FailureReport`], [`ShutdownReport`]), for JSON status pages, logs and
//!   exporters. Off by default.
//! * `tokio`: `async` handlers may await futures of tokio-based libraries; the runtime owns a
//!   tokio runtime on its own threads (`Runtime::tokio_handle`). Off by default: without
//!   it, whirl does not depend on tokio.
//! * Data crates: [`Isolated`] and [`Reply`] for the owned data types of the crates services
//!   use most, so a `Uuid` or a `DateTime<Utc>` goes into a message, a reply or a process's
//!   state as it is. One feature per crate, named after it: `uuid`, `chrono`, `time`,
//!   `serde_json`, `bytes`, `url`, `smallvec`, `indexmap`, `rust_decimal`, `http`, `ulid`,
//!   `semver`, `compact_str`, `arrayvec`, `hashbrown`, `ordered-float`, `ipnet`, `smol_str`.
//!   Generic containers are isolated when what they hold is (`HeaderMap<T>`,
//!   `IndexMap<K, V, S>`, `SmallVec<A>`); `http::Request`, `http::Response` and
//!   `http::Extensions` never are, since extensions hold any value, shared mutable state
//!   included. Off by default.
//!
//! Everything else is always there. The repository's ARCHITECTURE.md maps the runtime's
//! layers and the invariants the code relies on.
//!
//! # Tutorial
//!
//! ## 1. Messages
//!
//! A message is a type deriving [`Message`]. Everything in it must be able to cross a process
//! boundary ([`Isolated`]): owned data (`String`, `Vec<T>`, maps, numbers...), immutable
//! shared data (`Arc<T>`, `&'static T`), or the address of a process ([`Addr`]).
//!
//! ```
//! use std::sync::Arc;
//! use whirl::prelude::*;
//!
//! #[derive(Message)]
//! struct Hit {
//!     path: String,         // owned: moved to the receiver
//!     site: Arc<str>,       // shared, but immutable
//! }
//!
//! #[derive(Message)]
//! struct Reset;
//!
//! #[derive(Message)]
//! #[message(cost = 1 + self.body.len() as u64 / 4096)] // read by cost-based predicates
//! struct Upload {
//!     body: Vec<u8>,
//! }
//!
//! // The answer to work a group already admitted: its predicate never refuses it (refusing
//! // it would strand the request instead of shedding new work).
//! #[derive(Message)]
//! #[message(bypass_admission)]
//! struct Stored {
//!     bytes: u64,
//! }
//!
//! assert_eq!(Upload { body: vec![0; 8192] }.cost(), 3);
//! ```
//!
//! Shared *mutable* state is a compile error that names the field and says what to do:
//!
//! ```compile_fail
//! use std::rc::Rc;
//! use whirl::prelude::*;
//!
//! #[derive(Message)]
//! struct Hit {
//!     path: Rc<String>, // error: `Rc<String>` cannot cross a process boundary
//! }
//! ```
//!
//! The same goes for `Cell`, `RefCell`, `Mutex`, `RwLock`, atomics, raw pointers, borrowed
//! references and `&'static mut`, at any depth: `Vec<Rc<T>>` and `Option<Box<RefCell<T>>>`
//! are rejected too. A plain data type of your own used inside messages derives [`Isolated`]
//! (`#[derive(Isolated)]`), which checks its fields the same way.
//!
//! ## 2. A process
//!
//! `#[process]` goes twice: on the state type, where it checks every field is [`Isolated`], and
//! on the impl block, where each method marked `#[handle]` handles one message type.
//!
//! ```
//! # use whirl::prelude::*;
//! # #[derive(Message)] struct Hit { path: String }
//! # #[derive(Message)] struct Reset;
//! #[process]
//! struct Counter {
//!     hits: u64,
//! }
//!
//! #[process]
//! impl Counter {
//!     #[handle]
//!     fn hit(&mut self, msg: Hit, _ctx: &mut Ctx<Self>) -> Result<(), Failure> {
//!         if msg.path.is_empty() {
//!             return Err(Failure::new("empty path")); // terminates this process only
//!         }
//!         self.hits += 1;
//!         Ok(())
//!     }
//!
//!     #[handle]
//!     fn reset(&mut self, _: Reset) {
//!         self.hits = 0;
//!     }
//! }
//! ```
//!
//! A handler is `fn name(&mut self, msg: M, ctx: &mut Ctx<Self>) -> R`. The context may be
//! left out. The result `R` is what the handler *answers*: `()` answers nothing; a value (any
//! [`Reply`]: the standard library's owned types, and your types with `#[derive(Isolated)]` or
//! `#[derive(Message)]`) is sent back to whoever asked; `Result<T, E>` answers `T`, and an
//! `Err` (any `E` that converts into [`Failure`]: every `std::error::Error` does, so `?`
//! works) fails the process. The macro tells you the expected signature when a handler does
//! not fit it. `#[started]` and `#[terminated]` mark the hooks run before the first message and
//! once at the end.
//!
//! ## 3. Spawn, post, ask
//!
//! ```
//! # use whirl::prelude::*;
//! # #[derive(Message)] struct Hit { path: String }
//! # #[process] struct Counter { hits: u64 }
//! #[derive(Message, Debug)]
//! struct Hits;
//!
//! #[process]
//! impl Counter {
//! #   #[handle] fn hit(&mut self, _: Hit) { self.hits += 1; }
//!     // ... the handlers above, and one that answers:
//!     #[handle]
//!     fn hits(&mut self, _: Hits) -> u64 {
//!         self.hits
//!     }
//! }
//!
//! let rt = Runtime::new();                      // a default group, one worker per core
//! let counter = rt.spawn(Counter { hits: 0 });  // an `Addr<Counter>`
//! counter.post(Hit { path: "/".into() }).unwrap(); // never blocks
//! counter.post(Hit { path: "/about".into() }).unwrap();
//! assert_eq!(counter.call(Hits).unwrap(), 2);   // request/reply from outside the runtime
//! rt.shutdown_graceful();
//! ```
//!
//! `call` blocks the calling thread (it refuses to run on a worker); `ask(msg)` returns a
//! future to `.await` instead, in an `async` handler (below), in tokio code, or on any
//! executor. Both give up after 5 s unless told otherwise
//! ([`RuntimeBuilder::ask_timeout`]), as Erlang's `gen_server:call` does; the request is
//! still handled, and its answer discarded.
//!
//! Every address (an [`Addr`], a [`Recipient`], a [`routing::Router`], a remote address) has
//! these verbs, from the [`request::Sender`] trait the prelude brings in. Options go on a
//! request, and combine with any verb:
//!
//! ```
//! # use std::time::Duration;
//! # use whirl::prelude::*;
//! # #[derive(Message)] struct Hits;
//! # #[process] struct Counter { hits: u64 }
//! # #[process] impl Counter { #[handle] fn hits(&mut self, _: Hits) -> u64 { self.hits } }
//! # let rt = Runtime::new();
//! # let counter = rt.spawn(Counter { hits: 0 });
//! let admin = Principal::builder(1).priority(7).build()?;
//! let hits = counter
//!     .request(Hits)
//!     .on_behalf(&admin)                // the group's predicate weighs it as the admin's
//!     .timeout(Duration::from_secs(1))  // or `.no_timeout()`
//!     .call()?;                         // or `.post()`, or `.ask().await`
//! # assert_eq!(hits, 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A message that carries its own [`ReplyTo`] (for an answer sent later, or by another
//! process) is sent with `request_with(|reply| Msg { reply })` and `.call()` or `.ask()`.
//!
//! ## 3b. Async handlers: waiting without holding a thread
//!
//! A handler may be an `async fn`. While its future waits (for another process's answer, a
//! [`time::sleep`], a socket), the process is *parked*: its worker runs other processes, and
//! the future's waker puts the process back on its group's run queue. The process stays
//! sequential, as in Erlang or Kilim: its next message starts only after the future completes.
//! A million processes can each hold a pending await (a few hundred bytes each).
//!
//! ```
//! # use std::time::Duration;
//! # use whirl::prelude::*;
//! # #[derive(Message)] struct Hits;
//! # #[process] struct Counter { hits: u64 }
//! # #[process] impl Counter { #[handle] fn hits(&mut self, _: Hits) -> u64 { self.hits } }
//! #[derive(Message)]
//! struct Report;
//!
//! #[process]
//! struct Reporter { counter: Addr<Counter> }
//!
//! #[process]
//! impl Reporter {
//!     #[handle]
//!     async fn report(&mut self, _: Report) -> Result<String, Failure> {
//!         let hits = self.counter.ask(Hits).await?;      // the worker runs `counter` meanwhile
//!         whirl::time::sleep(Duration::from_millis(1)).await;
//!         Ok(format!("{hits} hits"))
//!     }
//! }
//!
//! let rt = Runtime::builder().threads(1).build().expect("the runtime starts");
//! let counter = rt.spawn(Counter { hits: 3 });
//! let reporter = rt.spawn(Reporter { counter });
//! assert_eq!(reporter.call(Report).unwrap(), "3 hits");
//! rt.shutdown_graceful();
//! ```
//!
//! With the `tokio` feature, the futures of tokio-based libraries (reqwest, sqlx, tonic) are
//! awaited directly: the runtime owns a tokio runtime on threads of its own, which drives their
//! sockets and timers; whirl's workers are never tokio workers. A process killed while its
//! handler is pending has the future dropped, its `terminated` hook run and its inbox
//! dead-lettered; a panic after an `.await` is an ordinary failure; a shutdown does not wait for
//! a future that never completes (the report counts it).
//!
//! Posting a message the process has no handler for does not compile:
//!
//! ```compile_fail
//! # use whirl::prelude::*;
//! # #[derive(Message)] struct Hit;
//! # #[derive(Message)] struct Reset;
//! # #[process] struct Counter { hits: u64 }
//! # #[process] impl Counter { #[handle] fn hit(&mut self, _: Hit) {} }
//! let rt = Runtime::new();
//! let counter = rt.spawn(Counter { hits: 0 });
//! counter.post(Reset); // error: `Counter` has no handler for `Reset`
//! ```
//!
//! ## 4. Overload: rejected messages come back
//!
//! A group's predicate decides, in the sender's thread, whether to admit a message. A rejected
//! post returns the message inside [`PostError::Rejected`], so the sender can degrade (serve a
//! cheaper answer, reply 503) and nothing is lost.
//!
//! ```
//! # use whirl::prelude::*;
//! # #[derive(Message)] struct Hit { path: String }
//! # #[process] struct Counter { hits: u64 }
//! # #[process] impl Counter { #[handle] fn hit(&mut self, _: Hit) { self.hits += 1; } }
//! use whirl::admission::QueueLength;
//!
//! let rt = Runtime::new();
//! // `max(0)` admits nothing, to show the path; real groups allow thousands of queued messages.
//! let web = rt.group("web").threads(1).predicate(QueueLength::max(0)).build().expect("build group");
//! let counter = rt.spawner().group(&web).spawn(Counter { hits: 0 });
//! match counter.post(Hit { path: "/".into() }) {
//!     Ok(()) => unreachable!("the group admits nothing"),
//!     Err(PostError::Rejected(hit)) => assert_eq!(hit.path, "/"), // degrade with `hit`
//!     Err(other) => unreachable!("the counter is alive: {other}"),
//! }
//! rt.shutdown_graceful();
//! ```
//!
//! ## 5. Groups as control points
//!
//! A group is a unit of control, not of threads: by default it runs on the runtime's shared
//! workers (one per core) as a scheduling domain of its own, and crossing from one group to
//! another costs no thread hop. Workers divide their time among busy groups in proportion to
//! their [shares](crate::GroupBuilder::share); a group may limit how many workers run it at
//! once ([`concurrency`](crate::GroupBuilder::concurrency)), or own threads
//! ([`threads`](crate::GroupBuilder::threads)) for handlers that block. Each group has four
//! plug-ins: the message predicate above, a [scheduler] (the order ready processes run in),
//! [concurrency controllers](crate::control) (the concurrency limit, or a dedicated pool's
//! size, and the run budget, adjusted while it runs) and [statistics](crate::control) that all
//! of them, and you, can read. Work is done on behalf of a
//! [`Principal`] (a session, a request): processes spawned for one carry it, and their
//! children inherit it.
//!
//! ```
//! use whirl::prelude::*;
//! #[derive(Message)] struct Hit { path: String }
//! #[process] struct Counter { hits: u64 }
//! #[process] impl Counter { #[handle] fn hit(&mut self, _: Hit) { self.hits += 1; } }
//! use whirl::control::AdaptiveConcurrency;
//! use whirl::scheduler::PrincipalPriority;
//! use whirl::Principal;
//! use whirl::admission::QueueLength;
//!
//! let rt = Runtime::new();
//! let web = rt
//!     .group("web")
//!     .predicate(QueueLength::max(10_000)) // consulted once the pool is at its maximum
//!     .scheduler(PrincipalPriority::default()) // higher priorities first, quotas per level
//!     .controller(AdaptiveConcurrency::default()) // the Whirlwind paper's figure 1
//!     .concurrency(1..=4) // how many shared workers may run it at once
//!     .build()?; // a second group named "web" would be refused
//! let admin = Principal::builder(1).priority(2).build().expect("principal"); // higher first
//! let guest = Principal::builder(2).build().expect("principal");
//! let for_admin = rt.spawner().group(&web).principal(admin.clone()).spawn(Counter { hits: 0 });
//! let for_guest = rt.spawner().group(&web).principal(guest).spawn(Counter { hits: 0 });
//! for _ in 0..10 {
//!     for_admin.post(Hit { path: "/admin".into() }).unwrap();
//!     for_guest.post(Hit { path: "/".into() }).unwrap();
//! }
//! rt.block_until_idle();
//!
//! let stats = web.stats();
//! assert_eq!(stats.counts.handled, 20);
//! assert!((1..=4).contains(&stats.threads));
//! assert_eq!(stats.principals.len(), 2); // per-principal counts, busiest first
//! assert_eq!(admin.handled(), 10);
//! println!("queue latency {}, handling {}", stats.queue_latency, stats.handling_time);
//! rt.shutdown_graceful();
//! # Ok::<(), whirl::GroupError>(())
//! ```
//!
//! ## 6. Failures and monitors
//!
//! A panic or an `Err` from a handler terminates only that process. A panic is reported as a
//! `tracing` error event naming the process, its group and the message type; the panic hook
//! that was installed before the runtime (the default prints to stderr, with a backtrace under
//! `RUST_BACKTRACE=1`) still runs for the first five, then for at most one every ten seconds,
//! so a storm of failing requests does not bury stderr in backtraces. A *system* process,
//! declared `#[process(system)]`, receives a [`Down`] message when a process it monitors
//! terminates; it must handle `Down` (the compiler checks). A non-system process that
//! monitors a failing process fails with it.
//!
//! ```
//! # use whirl::prelude::*;
//! #[derive(Message)]
//! struct Crash;
//!
//! #[process]
//! struct Worker;
//!
//! #[process]
//! impl Worker {
//!     #[handle]
//!     fn crash(&mut self, _: Crash) -> Result<(), Failure> {
//!         Err(Failure::new("asked to crash"))
//!     }
//! }
//!
//! #[derive(Message)]
//! struct Watch(Addr<Worker>);
//!
//! #[derive(Message, Debug)]
//! struct Failures(ReplyTo<Vec<String>>);
//!
//! #[process(system)]
//! struct Supervisor {
//!     failures: Vec<String>,
//! }
//!
//! #[process]
//! impl Supervisor {
//!     #[handle]
//!     fn watch(&mut self, Watch(worker): Watch, ctx: &mut Ctx<Self>) {
//!         ctx.monitor(&worker);
//!     }
//!
//!     #[handle]
//!     fn down(&mut self, notice: Down) {
//!         if notice.reason.is_failure() {
//!             self.failures.push(notice.reason.to_string()); // restart, escalate, log...
//!         }
//!     }
//!
//!     #[handle]
//!     fn failures(&mut self, Failures(reply): Failures) {
//!         let _ = reply.send(self.failures.clone());
//!     }
//! }
//!
//! let rt = Runtime::new();
//! let supervisor = rt.spawn(Supervisor { failures: Vec::new() });
//! let worker = rt.spawn(Worker);
//! supervisor.post(Watch(worker.clone())).unwrap();
//! rt.block_until_idle();
//! worker.post(Crash).unwrap();
//! rt.block_until_idle();
//! assert_eq!(supervisor.request_with(Failures).call().unwrap(), ["failed: asked to crash"]);
//! rt.shutdown_graceful();
//! ```
//!
//! ## 7. Moving processes between groups
//!
//! Which group a process runs in can change while it runs. [`Addr::move_to`] (or
//! [`Ctx::move_to`] from the process itself, or [`Group::move_process`] by id) moves it at its
//! next message boundary: the message it is handling finishes where it is, every later one is
//! handled in the new group, in the order it was posted. Its queue goes along, addresses taken
//! before the move keep working (they forward, keeping each sender's order;
//! [`Addr::current`] is the direct one), its monitors and timers follow, and its name still
//! reaches it. No `Down` is sent: the process did not end. The messages passed on count as
//! `moved` in the group left and `posted` in the group joined, so each group's accounting
//! still balances.
//!
//! *Automatic grouping*, which the paper leaves as future work, builds on it: a group's
//! [`AutoMove`] rule moves the processes its slow-turn watchdog finds blocking (a synchronous
//! driver holding a worker) to another group, where they block only each other.
//! `cargo run --release -p tour --bin auto_group` measures what that does for the
//! processes left behind.
//!
//! ```
//! use std::time::Duration;
//! use whirl::prelude::*;
//! use whirl::AutoMove;
//!
//! #[derive(Message)]
//! struct Render;
//!
//! #[process]
//! struct Report;
//!
//! #[process]
//! impl Report {
//!     #[handle]
//!     fn render(&mut self, _: Render) {
//!         std::thread::sleep(Duration::from_millis(30)); // a driver that blocks its thread
//!     }
//! }
//!
//! let rt = Runtime::new();
//! let web = rt.group("web").threads(2).slow_turn_threshold(Some(Duration::from_millis(10))).build()?;
//! let blocking = rt.group("blocking").threads(4).build()?;
//! web.auto_move(AutoMove::blocking_to(&blocking).after_slow_turns(2))?;
//!
//! let report = rt.spawner().group(&web).spawn(Report);
//! while report.current().group().name() != "blocking" {
//!     report.post(Render)?; // the old address keeps working after the move
//!     std::thread::sleep(Duration::from_millis(20));
//! }
//! assert_eq!(web.stats().auto_moved, 1);
//!
//! // And back, by hand: at the next message boundary, with whatever is queued.
//! report.move_to(&web)?;
//! rt.block_until_idle();
//! assert_eq!(report.current().group().name(), "web");
//! rt.shutdown_graceful();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A group that shares state ([below](#the-escape-hatch-state-shared-on-purpose)) keeps its
//! processes: none moves into or out of it.
//!
//! # What `#[process]` generates
//!
//! Nothing you could not write by hand, and nothing slower: for the impl block of step 2 it
//! generates the process's message type, `<Counter as Process>::Message` (it has no other
//! name): an enum with one variant per handler, named after the message type it holds
//! (`Hit(Hit)`, `Reset(Reset)`; where two handled types end in the same name, the variants are
//! named after the handlers instead), an
//! `impl Process` whose `handle` is a `match` calling your methods, `impl Handles<Hit>` and
//! `impl Handles<Reset>` (so `post` accepts exactly those types) and `From` conversions. You
//! rarely name the enum: you post the message types themselves, and a message left in the inbox
//! of a terminated process reaches the dead-letter sink as what was posted
//! (`letter.downcast::<Hit>()`). A method with a wrong signature is reported at its token and
//! left out of the generated process, so one mistake gives one error. The hooks take
//! `fn(&mut self)` or `fn(&mut self, ctx: &mut Ctx<Self>)` (`#[started]`, which may return a
//! `Result`) and `fn(&mut self)` or `fn(&mut self, reason: &ExitReason)` (`#[terminated]`). The
//! benchmark `cargo run --release -p bench --bin macro_dispatch_bench` runs a macro process
//! and its hand-written twin side by side; their compiled handler loops are identical. The
//! generated code names everything by absolute path, so it works under `#![no_implicit_prelude]`
//! and next to your own `Result` or `Option`.
//!
//! # Clients of external systems: `SharedClient`
//!
//! A connection pool, an HTTP client or a handle on another runtime is shared by design: it
//! synchronises itself, and several processes using one is the point. Such a type is not
//! [`Isolated`] (a pool holds a `Mutex` of idle connections), and being from another crate it
//! can neither derive `Isolated` nor take an `unsafe impl` (the orphan rule). The one sanctioned
//! way to hold it is [`SharedClient::new`]`(client, "why it may be shared")`: the wrapper is
//! visible in the field's type, the reason is kept (and printed by `Debug`), and nothing is
//! inferred. No dedicated group is needed. Here several processes share a real pool of SQLite
//! connections (r2d2 with rusqlite):
//!
//! ```
//! use r2d2_sqlite::SqliteConnectionManager;
//! use whirl::prelude::*;
//! use whirl::SharedClient;
//!
//! type Pool = r2d2::Pool<SqliteConnectionManager>;
//!
//! #[derive(Message)]
//! struct Record(String);
//!
//! #[derive(Message, Debug)]
//! struct Count(ReplyTo<i64>);
//!
//! #[process]
//! struct Journal {
//!     db: SharedClient<Pool>, // the field's type says the pool is shared, on purpose
//! }
//!
//! #[process]
//! impl Journal {
//!     #[handle]
//!     fn record(&mut self, Record(line): Record) -> Result<(), Failure> {
//!         let conn = self.db.get()?;
//!         conn.execute("INSERT INTO journal (line) VALUES (?1)", [line])?;
//!         Ok(())
//!     }
//!
//!     #[handle]
//!     fn count(&mut self, Count(reply): Count) -> Result<(), Failure> {
//!         let n = self.db.get()?.query_row("SELECT COUNT(*) FROM journal", [], |r| r.get(0))?;
//!         let _ = reply.send(n);
//!         Ok(())
//!     }
//! }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = std::env::temp_dir().join(format!("whirl-journal-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let pool = Pool::new(SqliteConnectionManager::file(dir.join("journal.db")))?;
//! pool.get()?.execute_batch(
//!     "DROP TABLE IF EXISTS journal; CREATE TABLE journal (line TEXT NOT NULL);",
//! )?;
//! let db = SharedClient::new(pool, "an r2d2 pool: SQLite is the shared state, the pool hands out connections");
//!
//! let rt = Runtime::new();
//! let writers: Vec<_> = (0..4).map(|_| rt.spawn(Journal { db: db.clone() })).collect();
//! for (i, writer) in writers.iter().enumerate() {
//!     for j in 0..25 {
//!         writer.post(Record(format!("writer {i} line {j}")))?;
//!     }
//! }
//! rt.block_until_idle();
//! assert_eq!(writers[0].request_with(Count).call()?, 100); // every writer's rows, through any writer
//! rt.shutdown_graceful();
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok(())
//! # }
//! ```
//!
//! Use it for clients whose shared state lives outside the program (the database here). Shared
//! *application* state, a cache or a counter, belongs in a process of its own. Trying to hold
//! such a client directly is an error whose notes name `SharedClient`.
//!
//! # Data types from other crates
//!
//! The data types of the crates services use most are [`Isolated`] (and replies) behind a
//! feature of whirl named after the crate: `uuid`, `chrono`, `time`, `serde_json`, `bytes`,
//! `url`, `smallvec`, `indexmap`, `rust_decimal`, `http`, `ulid`, `semver`, `compact_str`,
//! `arrayvec`, `hashbrown`, `ordered-float`, `ipnet`, `smol_str`. Turn on the ones you use
//! (`whirl = { version = "0.1", features = ["uuid", "chrono"] }`) and hold their types in
//! messages and state as you would a `String`. Their generic containers are isolated when
//! their elements are, and what could share state stays refused: `http::Request` and
//! `http::Response` carry `Extensions`, which may hold any `Send + Sync` value.
//!
//! For a plain data type no feature covers, trust it at the field, with the reason, in one
//! line. Every other field is still checked, and the reason is shown in the type's
//! documentation (on its `Isolated` impl):
//!
//! ```
//! # use whirl::prelude::*;
//! # mod geo { #[derive(Clone, Copy)] pub struct Point { pub lat: f64, pub lon: f64 } }
//! #[derive(Message)]
//! struct Locate {
//!     #[isolated(trust = "geo::Point is two f64s: owned, Copy, no interior mutability")]
//!     at: geo::Point,
//!     user: String, // still checked
//! }
//! # let _ = Locate { at: geo::Point { lat: 0.0, lon: 0.0 }, user: String::new() };
//! ```
//!
//! A trusted field must still be `Send`. For a whole type of your own crate that no derive can
//! reach (code a build script generates), [`trust_isolated!`] says the same of the type.
//!
//! The two ways out say different things. `#[isolated(trust = "...")]` says *this data shares
//! nothing*: the compiler cannot see it, the reason says why. [`SharedClient`] says *this is
//! shared, on purpose*: a thread-safe client of an external system (a connection pool, an HTTP
//! client) that many processes use at once. Wrapping plain data (a `Duration`) in a
//! `SharedClient`, or trusting a pool at a field, compiles, and tells a reader the wrong thing.
//!
//! # The escape hatch: state shared on purpose
//!
//! Section VI-C of the Whirlwind paper describes a service that shared an in-memory database,
//! with its own fine-grained locking, between several processes, because one process in front
//! of it was too slow. whirl allows that, loudly: the process declares why it shares state,
//! marks the shared fields, and runs only in a group built to host such processes. Spawned into
//! any other group, it fails at once, before running any of its code, with a failure that says
//! why.
//!
//! ```
//! # use std::collections::HashMap;
//! # use std::sync::{Arc, RwLock};
//! # use whirl::prelude::*;
//! # #[derive(Message)] struct Get(u64, ReplyTo<Option<String>>);
//! #[process(unsafe(shares_state = "the store locks per row; one process in front of it serialised all readers"))]
//! struct Shard {
//!     #[shared]
//!     store: Arc<RwLock<HashMap<u64, String>>>,
//!     served: u64, // still checked: only `#[shared]` fields are exempt
//! }
//! # #[process] impl Shard { #[handle] fn get(&mut self, _: Get) {} }
//!
//! let rt = Runtime::new();
//! let db = rt.group("db").threads(2).shares_state("shards share the row store").build().expect("build group");
//! let store = Arc::new(RwLock::new(HashMap::new()));
//! let shard = rt.spawner().group(&db).spawn(Shard { store, served: 0 });
//! # let _ = shard;
//! # rt.shutdown_graceful();
//! ```
//!
//! Such a group's processes are isolated as a group, not from each other, so they fail
//! together (the paper's "error propagation paths between all processes"): when one of them
//! fails, a panic half-way through an update that may have left the shared store
//! inconsistent, every other process of the group is killed with
//! [`FailureKind::SharedState`] naming the one that failed. Their monitors see failures, and
//! their supervisors restart them by their strategy; a process ending normally, or stopped by
//! its supervisor, takes nobody with it, and nothing outside the group is touched. A
//! supervisor hands the store to each incarnation as a start argument wrapped in a
//! [`SharedClient`] (`ChildSpec::worker_with(id, SharedClient::new(store, "why"), make_shard)`);
//! `whirl/tests/fail_together.rs` shows the whole cycle.
//!
//! For a single type the derive cannot see through, `unsafe impl Isolated for MyHandle {}` is
//! the other, equally greppable, way out.
//!
//! # What whirl checks, and what it cannot
//!
//! **At compile time, by the type system** (each rule has compile-fail cases in `ui-tests`):
//!
//! - Every field of a message (`#[derive(Message)]`), of data inside messages
//!   (`#[derive(Isolated)]`) and of a process's state (`#[process]`) is [`Isolated`]: owned
//!   data, immutable shared data (`Arc<T>`, `&'static T` of a `T` without interior
//!   mutability), process addresses, owned OS handles, function pointers, or a
//!   [`SharedClient`]. The check is on types, structurally: renaming an import, a type alias,
//!   a type named like another, recursion or generics change nothing; a generic type is
//!   `Isolated` exactly for arguments that are.
//! - Only processes can be spawned, and [`Process`] is an `unsafe` trait: the macros implement
//!   it after checking, and a hand-written impl must write `unsafe` and say why in a
//!   `// SAFETY:` comment. [`Handles<M>`](Handles) requires `M: Message`, so nothing but a
//!   message is ever posted.
//! - Everything else that moves a value into a process requires `Isolated`: replies
//!   ([`ReplyTo`], `call`, `ask`), [`Recipient<M>`](Recipient), timers (`post_after`,
//!   `post_every`), a principal's [`Estimate`](crate::admission::Estimate), supervisor child specs (initial state or
//!   `fn` + isolated arguments, never a closure), dynamic start arguments, an acceptor's
//!   [`Accept`](crate::net::Accept) handler.
//! - A [`Router`](crate::routing::Router) is `Isolated` and its strategy runs inside whichever
//!   process posts through it, so a strategy is data too: `fn` pointers, and the `Isolated +
//!   Sync` state of `Strategy::custom_with`, read only. Every public API that stores code and
//!   is reachable from process state takes a `fn` pointer and `Isolated` data: child specs and
//!   templates, router members and strategies, an acceptor's handler.
//! - Data from other crates: the types of the crates behind whirl's data features (see "Data
//!   types from other crates"), and nothing else unless trusted.
//! - The escape hatches are explicit and greppable: `#[isolated(trust = "...")]` on a field and
//!   `trust_isolated!` (plain data the compiler cannot see into), `unsafe impl Isolated`,
//!   `unsafe impl Process`, `#[process(unsafe(shares_state = "..."))]`, and
//!   `SharedClient::new(client, "...")`.
//!
//! **Not by types, and trusted**: what a `dyn Error` holds. A [`Failure`]'s causes are kept as
//! text, but an owned `std::io::Error` is `Isolated` and may carry a custom payload (`io::Error::
//! new(kind, payload)`) that a receiver could downcast; a payload holding shared mutable state
//! would pass. Payloads are errors, made to be read; keep them plain.
//!
//! **When a process is spawned**: a process declared `unsafe(shares_state)` runs only in a
//! group built with `shares_state`, and only in the group it names (otherwise it fails before
//! running any code, saying why).
//!
//! **Not by types, by design**: observers and policies that are not process state may share
//! state (metrics, test clocks and shared budgets need it): dead-letter sinks, supervisor event
//! sinks, clocks, admission predicates, schedulers and controllers, and a watch's callback
//! (`Addr::watch`, run once when the process ends). They are closures set up outside process
//! state (a supervisor spec holds its sink and clock as [`SharedClient`]s, with the reason),
//! they run outside any process's turn or as part of the runtime, and their docs say so.
//!
//! **By a whole-crate validator, `cargo whirl check`**: code reaches global state without any
//! type showing it. A handler that bumps a `static HITS: AtomicU64`, appends to a `static LOG:
//! Mutex<..>`, writes a `static mut` or keeps a `thread_local!` `RefCell` (state that silently
//! splits per worker thread) passes every type check. `cargo whirl check` (the `cargo-whirl`
//! crate: `cargo install --path cargo-whirl`) walks the compiled code from every handler and
//! hook of every process, through calls, closures, trait methods, operators, `Deref` and
//! `Drop` impls and generic helpers at their instantiations, across the workspace's crates,
//! and reports every such access like a compiler error, with the path from the handler:
//!
//! ```text
//! error: shared state: handler `Counter::hit` reaches static `HITS`: `AtomicU64`
//!   --> src/main.rs:18:9
//!    |
//! 18 |         HITS.fetch_add(1, Ordering::Relaxed);
//!    |         ^^^^ shared mutable state: its type has interior mutability (`AtomicU64` is not `Freeze`)
//! ```
//!
//! Where sharing is the intent, [`allow_shared`] says so with a reason, which the check lists
//! in its summary:
//!
//! ```
//! use std::sync::atomic::{AtomicU64, Ordering};
//!
//! #[whirl::allow_shared(reason = "a statistic for the operator; no process reads it")]
//! static SERVED: AtomicU64 = AtomicU64::new(0);
//!
//! # fn main() {
//! SERVED.fetch_add(1, Ordering::Relaxed);
//! # }
//! ```
//!
//! # Sockets
//!
//! With the `net` feature, `whirl::net` makes sockets processes, as in the Whirlwind paper's
//! HTTP server: the workers poll for readiness and turn it into messages, a `SocketConnection` owns a
//! TCP stream with bounded buffers, an `Acceptor` is the accept loop. The `iris_http` example
//! builds the paper's server on it (`cargo run --release -p iris --bin iris_http`).
//!
//! A `SocketEvent::Data` holds bytes wherever the network cut them, not messages. The process
//! owning a socket keeps a `Framed` with a codec (`LinesCodec` for text lines,
//! `LengthDelimited` for length-prefixed frames, or its own `Decoder` and `Encoder`): it
//! pushes each read into it and takes out whole items (`while let Some(line) =
//! framed.next_item()? { ... }`), and `framed.encode(item)?` is the `SocketMsg::Write` to
//! post. Every codec has a maximum frame length, so a peer cannot make it buffer without
//! bound.
//!
//! # Supervision
//!
//! A [`Supervisor`](crate::supervision::Supervisor) (Erlang/OTP's `supervisor`, the paper's section III-G) starts children
//! from [`ChildSpec`](crate::supervision::ChildSpec)s, monitors them, and restarts a failed one in a known good state, by its
//! [`RestartStrategy`](crate::supervision::RestartStrategy) and [`Restart`](crate::supervision::Restart) type, at most `max_restarts` times in a period; one more and it
//! stops its children and fails, so its own supervisor takes over.
//!
//! A child spec is data, as in OTP: [`ChildSpec::worker`](crate::supervision::ChildSpec::worker) keeps an initial state and starts a
//! clone of it each time; [`ChildSpec::worker_with`](crate::supervision::ChildSpec::worker_with) keeps arguments and a plain function,
//! OTP's `{Module, Function, Arguments}`. Both must be [`Isolated`], and the function is a `fn`
//! pointer, so a closure capturing shared state (an `Arc<Mutex<_>>` that every incarnation
//! would share with you) does not compile. Only observers may share state: a supervisor's
//! event sink ([`SupervisorSpec::on_event`](crate::supervision::SupervisorSpec::on_event)) and its [`Clock`](crate::time::Clock).
//!
//! A restarted child is a new process: the old address returns your message
//! ([`PostError::Terminated`]), and a name ([`ChildSpec::named`](crate::supervision::ChildSpec::named)) reaches the new one through
//! [`Runtime::whereis`] (a supervisor never takes a name from another live process). The
//! children a supervisor stops exit [`ExitReason::Shutdown`], which is not a failure.
//!
//! The dynamic API on the supervisor's address is OTP's: `start_child` (which waits for the
//! child's `started` hook and returns its failure), `terminate_child`, `restart_child`,
//! `which_children` (with [`ChildInfo::addr`](crate::supervision::ChildInfo::addr) for a child's typed address), `child_spec`,
//! `count_children`. A simple-one-for-one supervisor starts children of a
//! [`ChildTemplate<A>`](crate::supervision::ChildTemplate) with `start_dynamic(arg: A)`: the argument type is part of the
//! supervisor's type (`Supervisor<A>`), so a wrong one does not compile. The [`supervision`]
//! module documents the semantics and where whirl differs from OTP, and
//! `cargo run -p tour --bin supervision_tree` shows a tree surviving failures.
//!
//! ```
//! use whirl::prelude::*;
//!
//! #[derive(Message)]
//! struct Crash;
//!
//! #[derive(Message)]
//! struct Serve(ReplyTo<u64>);
//!
//! #[process]
//! #[derive(Clone)]
//! struct Service {
//!     served: u64,
//! }
//!
//! #[process]
//! impl Service {
//!     #[handle]
//!     fn crash(&mut self, _: Crash) -> Result<(), Failure> {
//!         Err(Failure::new("a bug"))
//!     }
//!
//!     #[handle]
//!     fn serve(&mut self, Serve(reply): Serve) {
//!         self.served += 1;
//!         let _ = reply.send(self.served);
//!     }
//! }
//!
//! let rt = Runtime::new();
//! let initial = Service { served: 0 };
//! let sup = rt.spawn(Supervisor::new(
//!     SupervisorSpec::new("root").child(ChildSpec::worker("service", initial).named("service")),
//! ));
//! rt.block_until_idle();
//!
//! let service = rt.whereis::<Service>("service").expect("started");
//! assert_eq!(service.request_with(Serve).call()?, 1);
//! assert_eq!(service.request_with(Serve).call()?, 2);
//! service.post(Crash)?;
//! rt.block_until_idle(); // the supervisor has restarted it
//!
//! assert!(matches!(service.post(Crash), Err(PostError::Terminated(Crash))));
//! let service = rt.whereis::<Service>("service").expect("restarted");
//! assert_eq!(service.request_with(Serve).call()?, 1, "a clone of the initial state");
//! assert_eq!(sup.count_children()?.restarts, 1);
//! rt.shutdown_graceful();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

//!
//! # Scheduling beyond FIFO, and routing
//!
//! Groups schedule their ready processes first-in first-out by default, on work-stealing
//! workers. The sections below are the other policies the seeds describe, each a builder
//! option or a type of its own, measured by an example, and then routers and process
//! groups: many processes behind one address.
#![doc = include_str!("../tutorial/cohort.md")]
#![doc = include_str!("../tutorial/backplane.md")]
#![doc = include_str!("../tutorial/routers.md")]
#![cfg_attr(feature = "tls", doc = include_str!("../tutorial/tls.md"))]
#![cfg_attr(feature = "prometheus", doc = include_str!("../tutorial/observing.md"))]
#![cfg_attr(docsrs, feature(doc_cfg))]
extern crate self as whirl;

pub use whirl_macros::{allow_shared, handle, process, started, terminated, Isolated, Message};
pub use whirl_runtime::*;

#[cfg(feature = "console")]
#[cfg_attr(docsrs, doc(cfg(feature = "console")))]
pub mod console;

/// What `#[process]` on a state type declares about the process, and the proof that its state
/// was checked for isolation.
///
/// Generated by `#[process]`; read it, do not implement it. `#[process]` on the impl block of
/// handlers requires it, so a process's state is always checked.
///
/// # Safety
///
/// Implementing it claims every field of the state is [`Isolated`] (other than fields holding
/// state shared under [`SharesState`]). `#[process]` checks this; a hand-written impl skips the
/// check.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not declared with `#[process]`",
    label = "`{Self}` needs `#[process]` on its definition",
    note = "add `#[process]` to the struct or enum `{Self}`: it checks that the process's state holds no shared mutable state"
)]
pub unsafe trait DeclaredProcess {
    /// `#[process(system)]`: the process receives termination notices as `Down` messages.
    const SYSTEM: bool;
    /// `#[process(group = "name")]`: the group the process is meant to run in.
    const GROUP: Option<&'static str>;
    /// `#[process(unsafe(shares_state = "reason"))]`: why the process shares state with others in its
    /// group.
    const SHARES_STATE: Option<&'static str>;
}

/// Trusts a data type of your own crate to be [`Isolated`] (and a [`Reply`]), with a reason,
/// where `#[derive(Isolated)]` cannot go: a type generated by a build script or another macro.
///
/// ```
/// mod generated {
///     // Stands in for code a build script writes (prost, bindgen...).
///     pub struct Row { pub id: u64, pub name: String }
///     pub struct Page<T> { pub rows: Vec<T> }
/// }
///
/// whirl::trust_isolated!(generated::Row => "generated plain data: numbers and strings");
/// whirl::trust_isolated!(impl<T> generated::Page<T> => "a page owns its rows");
///
/// fn crosses<T: whirl::Isolated>(_: &T) {}
/// crosses(&generated::Page { rows: vec![generated::Row { id: 1, name: "a".into() }] });
/// ```
///
/// It is the type-level form of `#[isolated(trust = "why")]`, which trusts one field and keeps
/// every other field checked: prefer that wherever the type has a definition you can derive
/// on. Each type parameter (`impl<T>`) is required to be `Isolated`. The reason is shown in
/// the impl's documentation and must not be blank; the type must be `Send + 'static`. The
/// orphan rule limits it to your own crate's types: a data type from another crate is trusted
/// at the field that holds it, or covered by a whirl feature named after its crate.
///
/// Trusting a type that holds shared mutable state (a lock, a cell, an atomic, an `Rc`) breaks
/// isolation, as an `unsafe impl` would: the reason is the promise.
#[macro_export]
macro_rules! trust_isolated {
    (impl<$($param:ident),+ $(,)?> $ty:ty => $reason:literal $(,)?) => {
        const _: () = ::core::assert!(
            $crate::__private::reason_given($reason),
            "trust_isolated!: the reason cannot be blank: say why the type holds no shared mutable state"
        );
        #[doc = ::core::concat!("Trusted as plain data (`whirl::trust_isolated!`): ", $reason)]
        // SAFETY: the user states, with the reason above, that the type holds no shared mutable
        // state when its parameters are isolated (I8).
        unsafe impl<$($param: $crate::Isolated),+> $crate::Isolated for $ty {}
        impl<$($param: $crate::Isolated),+> $crate::Reply for $ty {}
    };
    ($ty:ty => $reason:literal $(,)?) => {
        const _: () = ::core::assert!(
            $crate::__private::reason_given($reason),
            "trust_isolated!: the reason cannot be blank: say why the type holds no shared mutable state"
        );
        #[doc = ::core::concat!("Trusted as plain data (`whirl::trust_isolated!`): ", $reason)]
        // SAFETY: the user states, with the reason above, that the type holds no shared mutable
        // state (I8).
        unsafe impl $crate::Isolated for $ty {}
        impl $crate::Reply for $ty {}
    };
}

/// The names most programs need.
///
/// `use whirl::prelude::*;` brings them into scope. Each is documented at its one path (the
/// crate root, or `whirl::supervision`); the prelude only re-exports it.
pub mod prelude {
    #[doc(no_inline)]
    pub use crate::{handle, process, started, terminated, Isolated, Message};
    #[doc(no_inline)]
    pub use whirl_runtime::request::Sender as _;
    #[doc(no_inline)]
    pub use whirl_runtime::supervision::{
        ChildSpec, Restart, RestartStrategy, Supervisor, SupervisorSpec,
    };
    #[doc(no_inline)]
    pub use whirl_runtime::{
        Addr, Answers, CallError, Ctx, Down, ExitReason, Failure, Group, Handles, PostError,
        Principal, Process, ProcessId, Recipient, Reply, ReplyTo, Runtime, Unanswered,
    };
}

/// Support for the code the macros generate. Not a public API: it changes without notice.
#[doc(hidden)]
pub mod __private {
    pub use whirl_runtime::__allow_shared as allow_shared;
    pub use whirl_runtime::__private::posted;
    pub use whirl_runtime::{Ctx, Down, ExitReason, Failure, Handles, Isolated, Message, Process};

    pub use whirl_runtime::__private::{answer, into_handler_result, HandlerFuture, HandlerOutput};

    /// Moves the notice out of `slot` if `M` is `Down` itself (by `TypeId`): how a system
    /// process's generated `down_message` finds the handler for termination notices.
    #[inline]
    pub fn take_if<M: 'static>(slot: &mut Option<Down>) -> Option<M> {
        (slot as &mut dyn ::core::any::Any)
            .downcast_mut::<Option<M>>()
            .and_then(Option::take)
    }

    /// Asserts a handler's parameter is a `Message`; `false` if it is `Down` and the process
    /// (`system` says whether it is a system process) could never receive it.
    #[inline]
    pub const fn handler_parameter_must_be_a_message<T: Message>(system: bool) -> bool {
        system || !T::__IS_DOWN
    }

    /// Whether a process declared with `#[process]` is a system process; requiring the
    /// declaration is the point (an undeclared state type is reported here).
    #[inline]
    pub const fn declared_system<P: crate::DeclaredProcess>() -> bool {
        P::SYSTEM
    }

    /// Whether `reason` has a character other than whitespace: a `trust_isolated!` reason must.
    pub const fn reason_given(reason: &str) -> bool {
        let bytes = reason.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if !bytes[i].is_ascii_whitespace() {
                return true;
            }
            i += 1;
        }
        false
    }

    /// Asserts a `#[process(system)]` process handles `Down`.
    pub fn system_process_must_handle_down<P: Handles<Down>>() {}
}
