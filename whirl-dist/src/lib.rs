//! Distribution for whirl, on [Zenoh](https://zenoh.io): nodes, membership and failure
//! detection, typed remote addresses, monitors and links across nodes, a cluster-wide
//! registry, and spawning on named nodes.
//!
//! A **node** is one OS process with one Zenoh session and a fresh random [`NodeId`]. Nodes of
//! the same cluster find each other through the endpoints they are configured with
//! ([`NodeConfig`]), and each keeps a membership table:
//!
//! * a node is **Up** while its liveliness token is present;
//! * it is **Down**, with reason [`DownReason::NoConnection`], when its token is withdrawn: it
//!   shut down, crashed, or its link lease expired;
//! * Down is final: the node is **quarantined** and its id is never Up again, even if its token
//!   comes back after a partition heals ([`NodeEvent::ResurrectionRefused`]); frames from it
//!   are bounced as [`BounceReason::Quarantined`]. A node that was cut off restarts under a new
//!   id.
//!
//! **Messages across nodes.** A message type that implements serde's traits gets a stable name
//! with [`Remote`] (and an answer type with [`Request`]). A process is made reachable with
//! [`Node::export`], which lists the message types it accepts; any node then holds a typed
//! [`RemoteAddr`] to it ([`Node::remote`], or [`Node::whereis`] by registered name). It has
//! the verbs and options of every whirl address ([`whirl::request`]):
//!
//! * `post` never blocks and never waits for the network: the message comes back
//!   at once as `Rejected` when the peer's credit window is used up, as `Terminated` when its
//!   node is Down; a message the receiving node refuses later (its group's predicate, a
//!   terminated process, a type it does not accept) comes back to the address's
//!   [bounce handler](RemoteAddr::on_bounce);
//! * `ask` / `call` return the handler's answer, giving up after 5 s unless the request says
//!   otherwise (`request(msg).timeout(d).call()`);
//! * messages from one sender to one process arrive in the order they were posted;
//! * `request(msg).on_behalf(&principal)` makes a message carry a principal, which the
//!   receiving group's admission predicate sees;
//! * every message is accounted for ([`DistCounts`]): refused at the sender, delivered into the
//!   receiving runtime, bounced back, or in doubt when its node went Down before acknowledging
//!   or answering it. A node acknowledges a message only once the node that will handle it
//!   holds it: a message held for a process that is moving is acknowledged only after it went
//!   back to its sender to follow the process.
//!
//! **Watching across nodes.** [`Node::monitor`] gives a [`RemoteDown`] when a process ends, does
//! not exist, or its node is lost ([`RemoteExit::NoConnection`]); [`Node::link`] makes a local
//! and a remote process fail together. [`Node::register`] publishes a name cluster-wide; every
//! node holds the whole registry, and a node's names vanish with it. [`Node::spawn_on`] starts a
//! process on a named node from one of its factories ([`Node::add_factory`]).
//!
//! **Moving processes.** [`Node::migrate`] moves a process to another node with its state, its
//! queue, its names and its watchers; senders holding its old pid follow it, and so do those
//! that find its new pid by name, each sender's messages still in order, however many times it
//! moved (the one edge: a sender cut off from the old node as the process moved, that uses
//! both an old pid and the name, in whirl-dist's README); at most one copy of it ever runs,
//! whatever the time limit or a crash ([`Node::accept_migrations`] says which process types
//! may move and how to export them where they land). A monitor follows the process too. Hot deployment is a node of
//! the new version, a migration per process, and the old node's shutdown.
//!
//! **Traces.** A message sent across nodes from inside a span is handled in the runtime's
//! message spans (target `whirl::message` at `DEBUG`; see `whirl`'s "Observing" docs) under a
//! `remote` span naming the sending node. With feature `opentelemetry`, the frame carries the
//! sender's OpenTelemetry span context (25 bytes) and the `remote` span is its child, so a
//! request is one trace across nodes when both export through `tracing-opentelemetry`; the
//! context only parents spans, it grants nothing.
//!
//! ```no_run
//! use std::time::Duration;
//! use serde::{Deserialize, Serialize};
//! use whirl::prelude::*;
//! use whirl_dist::{Node, NodeConfig, Remote, Request};
//!
//! #[derive(Message, Serialize, Deserialize)]
//! struct Deposit(i64);
//! impl Remote for Deposit {
//!     const TAG: &'static str = "bank.Deposit/1";
//! }
//!
//! #[derive(Message, Serialize, Deserialize)]
//! struct Balance;
//! impl Remote for Balance {
//!     const TAG: &'static str = "bank.Balance/1";
//! }
//! impl Request for Balance {
//!     type Reply = i64;
//! }
//!
//! #[process]
//! struct Account {
//!     cents: i64,
//! }
//!
//! #[process]
//! impl Account {
//!     #[handle]
//!     fn deposit(&mut self, Deposit(cents): Deposit) {
//!         self.cents += cents;
//!     }
//!
//!     #[handle]
//!     fn balance(&mut self, _: Balance) -> i64 {
//!         self.cents
//!     }
//! }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // On the bank's node:
//! let runtime = Runtime::new();
//! // Each node has a certificate of the cluster's CA (see `certs` and the README).
//! let bank = Node::start(
//!     NodeConfig::new("demo")
//!         .tls("certs/bank.pem", "certs/bank.key", "certs/ca.pem")
//!         .listen(["tls/127.0.0.1:17447"]),
//! )?;
//! let account = runtime.spawn(Account { cents: 0 });
//! let pid = bank.export(&account).accept::<Deposit>().answer::<Balance>().build()?;
//! bank.register("account", pid)?;
//!
//! // On a client's node (another OS process, usually):
//! let client = Node::start(
//!     NodeConfig::new("demo")
//!         .tls("certs/client.pem", "certs/client.key", "certs/ca.pem")
//!         .listen(Vec::<String>::new())
//!         .connect(["tls/127.0.0.1:17447"]),
//! )?;
//! # std::thread::sleep(Duration::from_secs(1));
//! let deposits = client.whereis::<Deposit>("account").expect("registered");
//! deposits.post(Deposit(250))?;
//! let balance = client.remote::<Balance>(deposits.pid());
//! assert_eq!(balance.request(Balance).timeout(Duration::from_secs(5)).call()?, 250);
//! # Ok(())
//! # }
//! ```
//!
//! The API is blocking where it waits (`call`, `spawn_on`, `Node::start`), and never blocks
//! where it need not (`post`, `ask`, `monitor`). Zenoh runs its own tokio runtime internally,
//! and whirl-dist waits on it with Zenoh's `Wait` trait, so no async runtime is needed by the
//! caller, and `whirl` itself depends on neither Zenoh nor tokio.

mod addr;
mod ask;
mod auth;
pub mod certs;
mod config;
mod core;
mod counts;
mod dispatch;
mod error;
mod export;
mod identity;
mod link;
mod membership;
mod migrate;
mod moves;
mod node;
mod node_id;
mod pid;
mod registry;
mod remote;
mod security;
pub mod sim;
mod spawn;
mod trace;
pub mod transport;
mod watches;
mod wire;

pub use addr::{RemoteAddr, RemoteAsk, RemoteCallError, RemotePostError, Undelivered};
pub use auth::AuthError;
pub use config::NodeConfig;
pub use counts::DistCounts;
pub use error::DistError;
pub use export::ExportBuilder;
pub use membership::{DownReason, MemberState, NodeEvent, NodeStats};
pub use migrate::MigrateError;
pub use node::Node;
pub use node_id::{NodeId, ParseNodeIdError};
pub use pid::Pid;
pub use remote::{Remote, Request};
pub use security::{Peers, Pem, Policy};
pub use spawn::{FactoryCtx, SpawnRemoteError, Spawned};
pub use watches::{MonitorRef, RemoteDown};
pub use wire::{BounceReason, RemoteExit};
