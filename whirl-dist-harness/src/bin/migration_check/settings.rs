//! The command line and the check's constants: deadlines, sizes and timings. A leaf: every
//! other module reads it.

use std::time::Duration;

use clap::{Parser, ValueEnum};

/// The migration kind of accounts: the same name on every node.
pub const ACCOUNT_KIND: &str = "migration_check.Account/1";
/// The name the account is registered under, cluster-wide.
pub const ACCOUNT_NAME: &str = "account";
/// Senders an account keeps counters for (sender ids are 0 to this, exclusive).
pub const MAX_SENDERS: usize = 4;

/// How long setting up may take (a child starting, the mesh forming, a name appearing).
pub const SETUP_DEADLINE: Duration = Duration::from_secs(20);
/// How long a child may take to answer a command.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
/// How long one remote ask may take.
pub const ASK_TIMEOUT: Duration = Duration::from_secs(2);
/// The time limit given to `migrate` in the order and crash scenarios (a generous one).
pub const MIGRATE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the senders may take to post all their deposits.
pub const SEND_DEADLINE: Duration = Duration::from_secs(30);
/// How long the accounts may take to handle every accepted deposit, once the senders are done.
pub const SETTLE_DEADLINE: Duration = Duration::from_secs(8);
/// In the timeout scenario, the handled totals must stay unchanged this long to be final.
pub const STABLE_FOR: Duration = Duration::from_millis(600);
/// How long the survivors may take to see a killed node Down.
pub const DOWN_DEADLINE: Duration = Duration::from_secs(5);
/// In the crash scenario, how long things settle after X saw S Down.
pub const CRASH_SETTLE: Duration = Duration::from_secs(2);
/// How long a child may take to shut down once its stdin closes.
pub const CHILD_GRACE: Duration = Duration::from_secs(10);
/// The whole check, as a last resort against a hang: the parent exits (its children see their
/// stdin close and shut down).
pub const WATCHDOG: Duration = Duration::from_secs(900);

/// A sender retries a deposit refused with `Rejected` (window full) after this long.
pub const RETRY_AFTER: Duration = Duration::from_micros(200);
/// A sender gives up on one deposit refused with `Rejected` for this long (counted refused).
pub const RETRY_FOR: Duration = Duration::from_secs(5);
/// A sender that follows the name looks it up again every this many deposits.
pub const REFRESH_EVERY: u64 = 50;
/// A sender paces itself after every this many deposits.
pub const PACE_BATCH: u64 = 4;
/// Deposits handled at the account before the migration starts.
pub const WARM_UP: Duration = Duration::from_millis(400);
/// When migrate is expected to return, after the account's hold ends: the crash scenario
/// counts a kill drawn before migrate returns back from it (migrate returns 2 to 12 ms after
/// the hold's end on the 2-core development VM; each run's line says when it really did).
pub const RETURN_ESTIMATE: Duration = Duration::from_millis(5);

/// Which scenario to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Scenario {
    /// Per-sender order across a migration with a queue.
    Order,
    /// SIGKILL of the source node around the migration: nothing lost silently.
    Crash,
    /// A time limit shorter than a round trip: never two live copies.
    Timeout,
    /// All three, in that order.
    All,
}

/// Three whirl nodes as OS processes on loopback, checking the promises of `Node::migrate`.
#[derive(Parser, Debug, Clone)]
#[command(name = "migration_check")]
pub struct Args {
    /// Runs of each scenario (a fresh set of three node processes per run).
    #[arg(long, default_value_t = 4)]
    pub runs: u32,
    /// The scenario to run.
    #[arg(long, value_enum, default_value_t = Scenario::All)]
    pub scenario: Scenario,
    /// The seed of the random kill delays (default: drawn from the OS).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Deposits each sender posts in a run.
    #[arg(long, default_value_t = 20_000)]
    pub deposits: u64,
    /// Deposits per second each sender posts.
    #[arg(long, default_value_t = 10_000)]
    pub rate: u64,
    /// How long the account is held (its handler blocks) while the migration starts, in ms:
    /// deposits queue up behind it.
    #[arg(long, default_value_t = 200)]
    pub hold_ms: u64,
    /// The link lease in milliseconds (how long a silent peer lives).
    #[arg(long, default_value_t = 1_000)]
    pub lease_ms: u64,
    /// Internal: run as the child node of this name (s, t or x).
    #[arg(long, hide = true)]
    pub child: Option<String>,
    /// Internal: the cluster's name.
    #[arg(long, hide = true)]
    pub cluster: Option<String>,
    /// Internal: the directory holding the nodes' certificates.
    #[arg(long, hide = true)]
    pub certs: Option<std::path::PathBuf>,
    /// Internal: the loopback port the child listens on.
    #[arg(long, hide = true)]
    pub listen: Option<u16>,
    /// Internal: the endpoints the child connects to.
    #[arg(long, hide = true, value_delimiter = ',')]
    pub connect: Vec<String>,
}
