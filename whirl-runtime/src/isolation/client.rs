//! `SharedClient`: the one sanctioned way to hold a client of an external system in a process.
//!
//! Some values are shared by design and safe to share by contract: a database connection pool,
//! an HTTP client, a handle on another runtime. Each is internally synchronised, and many
//! processes using one is the point. They are not [`Isolated`], and for a type from another
//! crate neither `#[derive(Isolated)]` nor an `unsafe impl` (the orphan rule) is possible.
//! [`SharedClient`] wraps one, with the reason it may be shared, so that a process's state or a
//! message can hold it. The wrapper is the whole escape hatch: it is visible in the field's
//! type (and so in rustdoc), greppable, and never inferred.

use std::fmt;
use std::ops::Deref;

use super::Isolated;

/// A client of an external system, shared between processes on purpose: a connection pool, an
/// HTTP client, a runtime handle.
///
/// `T` must be `Send + Sync`: the processes holding clones use it from several worker threads
/// at once, so it must synchronise itself, as such clients do. The reason is kept and printed
/// by `Debug`, so logs and reviews see why the sharing is allowed.
///
/// Use it only for clients whose shared state lives outside the program's own data model (a
/// pool of connections to a database, where the database itself is the shared state). Shared
/// *application* state (a cache, a counter, a table) belongs in a process of its own.
///
/// It says *this is shared, on purpose*. Plain data that the compiler cannot see into (a data
/// type of another crate that no whirl feature covers) is the other case, *this shares
/// nothing*, and is said at the field with `#[isolated(trust = "why")]`: wrapping a
/// `Duration` or a `geo::Point` here compiles, but tells every reader that it is shared.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use whirl::{Isolated, SharedClient};
///
/// /// Stands in for a connection pool from another crate (r2d2, sqlx, deadpool...).
/// struct Pool { url: String, idle: Mutex<Vec<u32>> }
///
/// fn crosses<T: Isolated>(_: &T) {}
///
/// let pool = Arc::new(Pool { url: "db://local".into(), idle: Mutex::default() });
/// // crosses(&pool); // error: `Mutex<Vec<u32>>` cannot cross a process boundary
/// let pool = SharedClient::new(pool, "a connection pool: thread-safe, shared by every repository");
/// crosses(&pool);
/// assert_eq!(pool.url, "db://local");
/// ```
///
/// With `#[process]`, the field's type says it: `struct Repository { pool:
/// SharedClient<r2d2::Pool<SqliteConnectionManager>> }`. The tutorial in the `whirl` crate shows
/// several processes sharing a real SQLite pool this way.
///
/// The client's own methods are reached through `Deref` (`pool.get()`); the wrapper's are
/// associated functions (`SharedClient::reason(&pool)`), so they never shadow the client's.
pub struct SharedClient<T> {
    client: T,
    reason: &'static str,
}

impl<T: Send + Sync + 'static> SharedClient<T> {
    /// Wraps `client`, stating why it may be shared between processes.
    ///
    /// # Panics
    ///
    /// If `reason` is blank: the reason is the point of the wrapper.
    #[track_caller]
    pub fn new(client: T, reason: &'static str) -> Self {
        assert!(
            !reason.trim().is_empty(),
            "SharedClient::new needs a reason: say why this client may be shared between processes"
        );
        SharedClient { client, reason }
    }

    /// Why the client may be shared, as given to [`SharedClient::new`]. An associated function
    /// (`SharedClient::reason(&c)`), like every method of a wrapper that derefs to its client,
    /// so that it never shadows one of the client's own methods.
    pub fn reason(this: &Self) -> &'static str {
        this.reason
    }

    /// Unwraps the client (`SharedClient::into_inner(c)`).
    pub fn into_inner(this: Self) -> T {
        this.client
    }
}

impl<T> Deref for SharedClient<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.client
    }
}

impl<T: Clone> Clone for SharedClient<T> {
    fn clone(&self) -> Self {
        SharedClient {
            client: self.client.clone(),
            reason: self.reason,
        }
    }
}

impl<T> fmt::Debug for SharedClient<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedClient")
            .field("client", &std::any::type_name::<T>())
            .field("reason", &self.reason)
            .finish()
    }
}

// SAFETY: the client synchronises itself (`Sync`), and holding it in several processes is the
// declared intent, stated with a reason at construction; this is the sanctioned exception to
// isolation for clients of external systems, documented on the type. (I8)
unsafe impl<T: Send + Sync + 'static> Isolated for SharedClient<T> {}
