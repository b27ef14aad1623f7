//! Isolation: what may cross a process boundary.
//!
//! [`Isolated`] is whirl's compile-time replacement for Whirlwind's bytecode validator: a
//! message, and every field of a process's state, must be `Isolated`, so no two processes can
//! reach the same mutable memory (invariant I8 in ARCHITECTURE.md). [`Message`] is `Isolated`
//! data with a cost; [`SharesState`] marks the paper's section VI-C exception, confined to a
//! group that declares it; [`SharedClient`] holds a thread-safe client of an external system
//! with a stated reason. [`Reply`] is what a handler may answer with. Both traits are
//! implemented for the standard library's owned types and, each behind a feature named after
//! its crate, for the data types of the crates services use most (uuid, chrono, http...);
//! `surface.rs` pins down, at compile time, which types are `Isolated` and which are not.
//!
//! Layer 0: uses nothing else in the crate. Each runtime type that may be posted (an address,
//! a principal, a failure) carries its own `unsafe impl Isolated` next to its definition, with
//! the reason.

/// `unsafe impl Isolated` and `impl Reply` for plain types without type parameters: std's
/// error values (`reply`) and the data-crate types (`foreign`).
///
/// They are `do_not_recommend`, like the standard library's plain types: an error about a
/// type that is not isolated then lists the containers that are, not every type of every crate.
macro_rules! isolated_data {
    ($($ty:ty),* $(,)?) => {
        $(
            // SAFETY: each type listed is owned data, or immutable shared data, with no
            // interior mutability, as the comment on the invocation explains. (I8)
            #[diagnostic::do_not_recommend]
            unsafe impl Isolated for $ty {}
            #[diagnostic::do_not_recommend]
            impl Reply for $ty {}
        )*
    };
}

mod allow;
mod client;
mod foreign;
mod isolated;
mod reply;
#[cfg(test)]
mod surface;

#[doc(hidden)]
pub use allow::allow_shared;

pub use client::SharedClient;
pub use isolated::{Isolated, Message, SharesState};
pub use reply::Reply;
