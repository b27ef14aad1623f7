//! Declarative assembly: a whirl application's groups, admission predicates, concurrency
//! controllers, schedulers, CPU budgets and supervision trees described in a TOML file, built
//! by [`Assembly::build`], and re-tuned while it runs when the file changes (as Whirlwind
//! assembled its applications from configuration files).
//!
//! # The file
//!
//! ```toml
//! [runtime]
//! threads = 2                   # the shared workers (default: one per core)
//!
//! [groups.web]                  # on the shared workers: a scheduling domain
//! concurrency = { min = 1, max = 4 }      # how many workers at once; or a fixed count
//! share = 200                             # its weight against other groups (default 100)
//! budget = 64                             # messages per turn
//! slow_turn_threshold = "50ms"            # durations carry their unit: us, ms, s, m
//! scheduler = { principal_priority = { quota = [[2, 4], [1, 2]] } }
//! controller = { adaptive = { period = "250ms", idle_threshold = 0.5 } }
//! predicate = { all = [
//!     { priority_thresholds = { max = 16, at_least = [[1, 64], [2, 1024]] } },
//!     { cost_budget = { budget = 64 } },
//! ] }
//!
//! [groups.batch]
//! threads = 1                             # a thread of its own (a dedicated group)
//! scheduler = { cohort = { batch = 8 } }
//! cpu_budget = { share = 0.25, period = "100ms" }
//! predicate = { token_bucket = { rate = 500.0, depth = 50 } }
//!
//! [supervisors.app]               # a root supervisor
//! strategy = "one_for_one"        # one_for_all, rest_for_one
//! intensity = { max_restarts = 3, period = "5s" }
//! name = "app"                    # registered under this name (optional)
//! children = [
//!     { id = "cache", process = "cache", args = { capacity = 100 }, group = "web", name = "cache" },
//!     { id = "jobs", supervisor = { strategy = "one_for_all", children = [
//!         { id = "worker", process = "worker", group = "batch", restart = "transient", shutdown = "1s" },
//!     ] } },
//! ]
//! ```
//!
//! Kinds are the one key of an inline table, their parameters its value:
//!
//! * **predicates** (`whirl::admission`): `queue_length = { max }`,
//!   `priority_thresholds = { max, at_least = [[priority, max], ...] }`,
//!   `cost_budget = { budget }`, `token_bucket = { rate, depth, charge_cost }`,
//!   `response_time = { target }`, `utility_per_cost = { capacity, lowest, highest }`,
//!   `session_consistent = { hold, ceiling, max_sessions, inner = <predicate> }`,
//!   `overload = { target, window, calm, inner = <predicate> }` (`inner` sheds only while the
//!   group's response time is over `target`; the first `priority_thresholds` inside it are
//!   scaled to the target), and the combinators `all = [...]`, `any = [...]`, `not = <predicate>`;
//! * **controllers** (`whirl::control`): `adaptive`, `fixed`, `seda_pool`, `seda_batching`,
//!   each with its builder's settings as keys (`period`, `queue_threshold`, ...); a group may
//!   add SEDA's budget controller beside a thread controller with `batching = { ... }`;
//! * **schedulers** (`whirl::scheduler`): `"fifo_stealing"` (the default), `"fifo"`,
//!   `{ cohort = { batch } }`, `{ stride = { tickets = [[class, tickets], ...] } }`,
//!   `{ principal_priority = { quota = [[level, turns], ...] } }`.
//!
//! Children run processes the program registers by name ([`Factories`]): a process type is a
//! Rust type, so the file names it and a factory makes it from the child's `args`. A child's
//! `group` places it (default: the supervisor's), `name` registers it.
//!
//! # Errors
//!
//! A file that is not right is an error, never a panic, and the error says where: every
//! [`ConfigError`] from a file displays as `FILE:LINE:COLUMN: what was expected` — syntax,
//! wrong types, unknown keys (every table refuses them), unknown groups, unknown process
//! types, values the runtime refuses, and values that would silently mean something else or
//! make a group refuse every message (`threads = 0`, `budget = 0`, `queue_length.max = 0`,
//! `cost_budget.budget = 0`, `token_bucket.depth = 0`, `priority_thresholds.max = 0` at every
//! priority).
//!
//! ```
//! use whirl_config::Assembly;
//!
//! let text = "[groups.web]\nthreads = 2\npredicate = { queue_length = { maxx = 10 } }\n";
//! let err = Assembly::parse(text, "app.toml").unwrap_err();
//! assert!(err.to_string().starts_with("app.toml:3:"), "{err}");
//! assert!(err.to_string().contains("maxx"), "{err}");
//! ```
//!
//! # Reload
//!
//! [`Assembled::reload`] applies a new version of the file to the running application:
//! predicate parameters (through the predicates' setters, which store into the atomics the
//! post path reads), controllers (replaced by ones with the new parameters) and group budgets
//! change at once; everything structural (threads, schedulers, groups, trees, a predicate's
//! shape) is reported in [`Reloaded::needs_restart`] and left as it runs. A [`Reloader`]
//! does this whenever the file's text changes.
//!
//! ```
//! use serde::Deserialize;
//! use whirl::prelude::*;
//! use whirl_config::{Assembly, Factories};
//!
//! #[derive(Message)]
//! struct Get;
//!
//! #[process]
//! struct Cache {
//!     capacity: usize,
//! }
//!
//! #[process]
//! impl Cache {
//!     #[handle]
//!     fn get(&mut self, _: Get) {}
//! }
//!
//! #[derive(Clone, Deserialize, Isolated)]
//! struct CacheArgs {
//!     capacity: usize,
//! }
//!
//! let text = r#"
//! [groups.web]
//! threads = 1
//! predicate = { queue_length = { max = 1000 } }
//!
//! [supervisors.app]
//! children = [{ id = "cache", process = "cache", args = { capacity = 10 }, group = "web", name = "cache" }]
//! "#;
//! let assembly = Assembly::parse(text, "app.toml")?;
//! let rt = assembly.runtime()?;
//! let factories = Factories::new().process("cache", |a: CacheArgs| Cache { capacity: a.capacity });
//! let app = assembly.build(&rt, &factories)?;
//! assert_eq!(app.group("web").map(|g| g.name()), Some("web"));
//!
//! // The queue limit drops to 10, the thread count is a restart.
//! let edited = text.replace("max = 1000", "max = 10").replace("threads = 1", "threads = 2");
//! let report = app.reload(&Assembly::parse(&edited, "app.toml")?);
//! assert_eq!(report.applied, ["groups.web.predicate.max"]);
//! assert_eq!(report.needs_restart[0].path, "groups.web.threads");
//! rt.shutdown_graceful();
//! # Ok::<(), whirl_config::ConfigError>(())
//! ```

mod assembly;
mod controller;
mod error;
mod factories;
mod predicate;
mod reloader;
mod schema;

pub use assembly::{Assembled, Assembly, Reloaded, DEFAULT_GROUP};
pub use error::{ConfigError, Location, NeedsRestart};
pub use factories::Factories;
pub use reloader::Reloader;
