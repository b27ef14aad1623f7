//! The command line and the check's constants: its deadlines and the sizes of its steps. A
//! leaf: every other module reads it.

use std::time::Duration;

use clap::Parser;

/// The migration kind of accounts: the same name on every node.
pub const ACCOUNT_KIND: &str = "cluster_check.Account/1";
/// How long setting up may take (a child starting, the mesh forming, a name appearing).
pub const SETUP_DEADLINE: Duration = Duration::from_secs(20);
/// How long a child may take to answer a command.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
/// How long one remote ask may take.
pub const ASK_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a flow may take to settle (its account's balance equal to the deposits accepted).
pub const SETTLE_DEADLINE: Duration = Duration::from_secs(5);
/// How long a node's counters may take to come to rest for a report.
pub const REST_DEADLINE: Duration = Duration::from_secs(5);
/// How long the survivors may take to see the killed node Down.
pub const DOWN_DEADLINE: Duration = Duration::from_secs(5);
/// After a flow into B settled, time for B's last acknowledgements to come back (whirl-dist
/// acknowledges every 5 ms), so that nothing sent to B is unacknowledged when it is killed.
pub const ACK_GRACE: Duration = Duration::from_millis(100);
/// The whole demo, as a last resort against a hang: the parent exits (its children see their
/// stdin close and shut down).
pub const WATCHDOG: Duration = Duration::from_secs(120);

/// Remote asks timed in step 2.
pub const ASKS: usize = 300;
/// Posts to B's account after the kill (all refused at once).
pub const POSTS_AFTER_KILL: u64 = 100;
/// A flow re-resolves its registry name every this many posts.
pub const REFRESH_EVERY: u64 = 100;
/// A flow paces itself after every this many posts.
pub const PACE_BATCH: u64 = 20;

/// Three whirl nodes as OS processes on loopback: registry, remote asks, SIGKILL, accounting.
#[derive(Parser, Debug)]
#[command(name = "cluster_check")]
pub struct Args {
    /// Deposits per second in each flow (A → account-b, A → account-c, C → account-a).
    #[arg(long, default_value_t = 2_000)]
    pub rate: u64,
    /// The link lease in milliseconds (how long a silent peer lives).
    #[arg(long, default_value_t = 1_000)]
    pub lease_ms: u64,
    /// How long the flows run before the migration, after it, and after the kill (ms).
    #[arg(long, default_value_t = 1_000)]
    pub phase_ms: u64,
    /// Internal: run as the child node of this name.
    #[arg(long, hide = true)]
    pub child: Option<String>,
    /// Internal: the cluster's name.
    #[arg(long, hide = true)]
    pub cluster: Option<String>,
    /// Internal: the loopback port the child listens on.
    #[arg(long, hide = true)]
    pub listen: Option<u16>,
    /// Internal: the endpoints the child connects to.
    #[arg(long, hide = true, value_delimiter = ',')]
    pub connect: Vec<String>,
    /// Internal: how many peers the child waits for before it is ready.
    #[arg(long, hide = true, default_value_t = 2)]
    pub peers: usize,
}
