//! Distribution for whirl, on [Zenoh](https://zenoh.io): nodes, membership and failure
//! detection.
//!
//! A **node** is one OS process with one Zenoh session and a fresh random [`NodeId`]. Nodes of
//! the same cluster find each other through the endpoints they are configured with
//! ([`NodeConfig`]), and each keeps a membership table:
//!
//! * a node is **Up** while its liveliness token is present;
//! * it is **Down**, with reason [`DownReason::NoConnection`], when its token is withdrawn: it
//!   shut down, crashed, or its link lease expired;
//! * Down is final: the node is **quarantined** and its id is never Up again, even if its token
//!   comes back after a partition heals ([`NodeEvent::ResurrectionRefused`]). A node that was
//!   cut off restarts under a new id.
//!
//! This is the membership layer of the design in the project's distribution notes (Zenoh
//! peer mode, liveliness tokens as the single failure detector, Akka-style quarantine); remote
//! posting, monitors and the registry build on it.
//!
//! ```no_run
//! use std::time::Duration;
//! use whirl_dist::{Node, NodeConfig, NodeEvent};
//!
//! # fn main() -> Result<(), whirl_dist::DistError> {
//! let a = Node::start(NodeConfig::new("demo").listen(["tcp/127.0.0.1:17447"]))?;
//! let b = Node::start(
//!     NodeConfig::new("demo")
//!         .listen(Vec::<String>::new())
//!         .connect(["tcp/127.0.0.1:17447"]),
//! )?;
//! let events = a.events();
//! assert_eq!(events.recv_timeout(Duration::from_secs(10)).ok(), Some(NodeEvent::Up(b.id())));
//! let b_id = b.id();
//! b.shutdown()?;
//! assert!(matches!(
//!     events.recv_timeout(Duration::from_secs(10)),
//!     Ok(NodeEvent::Down { node, .. }) if node == b_id
//! ));
//! a.shutdown()?;
//! # Ok(())
//! # }
//! ```
//!
//! The API is blocking: Zenoh runs its own tokio runtime internally, and whirl-dist waits on it
//! with Zenoh's `Wait` trait, so no async runtime is needed by the caller.

mod addr;
mod ask;
pub mod config;
mod core;
mod counts;
mod dispatch;
mod error;
mod export;
mod link;
pub mod membership;
mod node;
mod node_id;
mod pid;
mod registry;
mod remote;
mod spawn;
mod watches;
mod wire;

pub use addr::{RemoteAddr, RemoteCallError, RemotePostError, Undelivered};
pub use config::NodeConfig;
pub use counts::DistCounts;
pub use error::DistError;
pub use export::ExportBuilder;
pub use membership::{DownReason, MemberState, NodeEvent, NodeStats};
pub use node::Node;
pub use node_id::{NodeId, ParseNodeIdError};
pub use pid::Pid;
pub use remote::{Remote, Request};
pub use spawn::{FactoryCtx, SpawnRemoteError, Spawned};
pub use watches::{MonitorRef, RemoteDown};
pub use wire::{BounceReason, RemoteExit};
