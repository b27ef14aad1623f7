//! I/O readiness: one `mio::Poll` per runtime for every registered socket, each readiness
//! event turned into a call of the callback registered for it (which posts a message to the
//! process owning the socket). No thread per connection, and, on a runtime with shared
//! workers, no poller thread either: the workers wait in the poll when they have nothing to
//! run, and look at it between turns when they do (`poller.rs`).
//!
//! [`Net`] is the handle a runtime hands out ([`Runtime::net`](crate::Runtime::net),
//! [`Ctx::net`](crate::Ctx::net)); the socket processes of [`net`](crate::net) use it. mio's
//! types stay inside the crate: registering a source is for the runtime's own socket
//! processes.
//!
//! Layer 5 (feature `net`): uses `isolation` only; the kernel of the `group` layer owns the
//! runtime's poller.

mod poller;
mod readiness;

pub use poller::Net;
pub(crate) use poller::Registration;
pub use readiness::Readiness;
