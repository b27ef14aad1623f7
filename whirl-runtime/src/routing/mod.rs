//! Routing: one address in front of many processes, and named groups of processes.
//!
//! * [`Router`]: a pool of processes of one type behind one address (Akka's routers, the
//!   DDE's "router" row). Members are spawned by the router from a function and its
//!   arguments, in a group of your choice, and picked per message by a [`Strategy`]: round
//!   robin, random, broadcast, consistent hashing (a ring with virtual nodes), or your own
//!   closure. The router is their supervisor: a member that ends is restarted, the messages
//!   that were queued in its inbox are kept (not dead-lettered), and what is routed to it
//!   meanwhile waits in a bounded buffer; the replacement gets them all, in order, before
//!   anything new. [`Router::resize`] and [`Autoscale`] (following the group's concurrency
//!   controller, or its queue length) grow and shrink the pool without losing a message.
//! * [`ProcessGroups`]: Erlang's `pg`, per runtime: processes join and leave named groups,
//!   anyone posts to every member, and a member that ends leaves on its own.
//!
//! From the bottom up: `strategy.rs` (choosing a member, the hash ring), `autoscale.rs` (the
//! resizing signals), `table.rs` (the slot table: posting and buffering), `manager.rs` (the
//! process that restarts and resizes), `router.rs` (the handle and its builder), `pg.rs`
//! (process groups).
//!
//! Layer 10: uses `process` and below.

mod autoscale;
mod manager;
mod pg;
mod router;
mod strategy;
mod table;

pub use autoscale::Autoscale;
pub use pg::{PostAllReport, ProcessGroup, ProcessGroups};
pub use router::{Router, RouterBuilder, RouterError, RouterStats, DEFAULT_BUFFER};
pub use strategy::{Members, Strategy, DEFAULT_VIRTUAL_NODES};
