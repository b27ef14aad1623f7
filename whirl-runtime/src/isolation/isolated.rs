//! Compile-time isolation: which values may cross a process boundary.
//!
//! Whirlwind v4 checked isolation with a bytecode validator: "the messages and all transitively
//! referenced values needed to be either immutable, a process or have ownership transferred".
//! whirl checks the same rule at compile time with one marker trait, [`Isolated`], implemented
//! exactly for
//!
//! * **owned data**, moved from sender to receiver: primitives, `String`, `Box`, `Vec` and the
//!   other std collections, `Option`, `Result`, tuples, arrays, times, paths, addresses of the
//!   network kind;
//! * **immutable shared data**: `Arc<T>` and `&'static T` where `T: Isolated + Sync` (so `T`
//!   has no interior mutability: `Arc<str>`, `Arc<Vec<u8>>`, `&'static str`);
//! * **owned handles on the operating system**: `File`, `TcpStream`, `TcpListener`,
//!   `UdpSocket`, Unix sockets, `OwnedFd`, a `Child` and its pipes: moving one moves the
//!   only handle (whatever the kernel shares beyond it is outside the program's memory);
//! * **code without data**: `fn` pointers, including higher-ranked ones (`fn(&str) -> usize`);
//! * **owned results and errors**: a thread's `JoinHandle<T>` of an isolated `T`, an owned
//!   `std::io::Error`;
//! * **the data types of other crates**, each behind a feature named after its crate (the
//!   `foreign` module lists them);
//! * **processes**: [`Addr`](crate::Addr), [`Recipient`](crate::Recipient), and the one-shot
//!   [`ReplyTo`](crate::ReplyTo);
//! * **clients of external systems** wrapped, on purpose and with a reason, in
//!   [`SharedClient`](crate::SharedClient).
//!
//! and never for `Rc`, `Cell`, `RefCell`, `UnsafeCell`, `Mutex`, `RwLock`, atomics, raw
//! pointers, non-`'static` references, `&'static mut`, or anything that contains one of them.
//! There is deliberately no blanket impl over `Send + Sync`: `Arc<Mutex<T>>` is both, and is
//! exactly the shared mutable state isolation forbids.
//!
//! `#[derive(Message)]` and `#[derive(Isolated)]` implement the trait for user types whose
//! fields are all `Isolated`, and `#[process]` requires it of every field of a process's state,
//! so the check is transitive and costs nothing at run time.
//!
//! # Escape hatches
//!
//! All are loud and greppable:
//!
//! * [`SharedClient::new(client, "why")`](crate::SharedClient::new) for a client of an external
//!   system (a connection pool, an HTTP client, a runtime handle) that is internally shared and
//!   thread-safe by contract, including types from other crates, which `#[derive(Isolated)]`
//!   cannot reach and the orphan rule keeps from an `unsafe impl`.
//! * `#[isolated(trust = "why")]` on a field of a derived type (or of process state) whose type
//!   is plain data the compiler cannot see into: a data type of another crate that no whirl
//!   feature covers. Only that field is trusted (it must still be `Send`); the reason shows in
//!   the type's documentation. `whirl::trust_isolated!(Type => "why")` says the same of a
//!   whole type of your own crate that no derive can reach (generated code).
//! * `unsafe impl Isolated for MyType {}` for a type of your own that the derive cannot see
//!   through. The `unsafe` is the promise.
//! * `#[process(unsafe(shares_state = "why"))]` with `#[shared]` fields, for the paper's section VI-C
//!   case of processes that knowingly share state (an in-memory database with fine-grained
//!   locking). Such a process implements [`SharesState`] and may only run in a group built with
//!   [`GroupBuilder::shares_state`](crate::GroupBuilder::shares_state); spawned anywhere else it fails at once, before it runs
//!   any of its own code.
//!
//! # Keeping the impls honest
//!
//! Every `unsafe impl` below is sound only while the type holds no shared mutable state. The
//! runtime's own handles ([`Addr`](crate::Addr), [`Principal`](crate::Principal),
//! [`Failure`](crate::Failure)...) are listed here: whoever adds interior mutability to one of
//! them must revisit its impl.

use std::borrow::Cow;
use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap, HashSet, LinkedList, VecDeque};
use std::ffi::{CStr, CString, OsStr, OsString};
use std::hash::{BuildHasherDefault, RandomState};
use std::marker::PhantomData;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::num::{
    NonZeroI128, NonZeroI16, NonZeroI32, NonZeroI64, NonZeroI8, NonZeroIsize, NonZeroU128,
    NonZeroU16, NonZeroU32, NonZeroU64, NonZeroU8, NonZeroUsize, Saturating, Wrapping,
};
use std::ops::{Bound, Range, RangeFrom, RangeInclusive, RangeTo, RangeToInclusive};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// Data that may cross a process boundary: owned, immutable and shared, or a process address.
///
/// This is whirl's compile-time replacement for Whirlwind's isolation validator. A message
/// (and, transitively, everything it holds) must be `Isolated`, and so must every field of a
/// process's state, so that two processes can never reach the same mutable memory. The
/// module documentation lists the impls.
///
/// Do not implement it by hand for data types: `#[derive(Isolated)]` (or `#[derive(Message)]`
/// for a message) checks every field for you.
///
/// # Safety
///
/// Implementing it promises that a value of the type, once moved to another process, shares
/// no mutable state with anything the sender keeps: no interior mutability reachable through
/// shared pointers, no raw pointers to shared memory, no borrowed data. Violating it brings
/// back the data races and accidental sharing the actor model exists to exclude.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use whirl::Isolated;
///
/// fn crosses<T: Isolated>(_: &T) {}
///
/// crosses(&String::from("owned"));
/// crosses(&Arc::<str>::from("shared and immutable"));
/// crosses(&vec![(1u8, 'x')]);
/// ```
///
/// ```compile_fail
/// use std::sync::{Arc, Mutex};
/// use whirl::Isolated;
///
/// fn crosses<T: Isolated>(_: &T) {}
///
/// crosses(&Arc::new(Mutex::new(0))); // shared mutable state
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot cross a process boundary: it is not `Isolated`",
    label = "`{Self}` is not known to be owned data, immutable shared data or a process address",
    note = "messages and process state may hold only owned data, immutable shared data (`Arc<T>`, `&'static T`) or process addresses (`Addr<P>`); a type of your own that holds only such data derives `Isolated` (or `Message` for a message)",
    note = "a data type from another crate: if whirl has a feature named after that crate (uuid, chrono, time, serde_json, bytes, url, smallvec, indexmap, rust_decimal, http, ulid, semver, compact_str, arrayvec, hashbrown, ordered-float, ipnet, smol_str), enabling it covers the crate's plain data types: `whirl = {{ features = [\"uuid\"] }}` (what a feature leaves refused may hold shared state, as its docs say); other plain data is trusted at the field, in one line: `#[isolated(trust = \"why it holds no shared mutable state\")]`",
    note = "shared mutable state (a lock, a cell, an atomic, `Rc`, a channel) cannot be shared: keep it in a process of its own and pass its `Addr`; a client of an external system that is thread-safe by contract (a connection pool, an HTTP client) is held as `whirl::SharedClient::new(client, \"why it may be shared\")`"
)]
pub unsafe trait Isolated: Send + 'static {}

/// A value a process can receive: [`Isolated`] data with a cost.
///
/// Derive it: `#[derive(Message)]` checks that every field is `Isolated` and implements both
/// traits. A handler in a `#[process]` impl block takes exactly one `Message` by value.
///
/// ```
/// use whirl::{Isolated, Message};
///
/// struct Upload { bytes: Vec<u8> }
/// // SAFETY: `Vec<u8>` is owned data. (Real code writes `#[derive(Message)]`.)
/// unsafe impl Isolated for Upload {}
/// impl Message for Upload {
///     fn cost(&self) -> u64 {
///         1 + self.bytes.len() as u64 / 4096
///     }
/// }
///
/// assert_eq!(Upload { bytes: vec![0; 8192] }.cost(), 3);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a message",
    label = "a handler's parameter must be a type deriving `Message`",
    note = "add `#[derive(Message)]` to the type's definition: it checks the type can cross a process boundary",
    note = "to receive a type from another crate (`String`, `u64`...), wrap it: `#[derive(Message)] struct Text(String);`"
)]
pub trait Message: Isolated {
    /// Whether posts of this message skip the receiving group's admission control
    /// ([`MessagePredicate`](crate::admission::MessagePredicate)). For replies and control messages that
    /// belong to work the group already admitted (a file read's result coming back to the
    /// handler that asked for it, a "stop" to a dispatcher): refusing those would strand the
    /// admitted work instead of shedding new work. Defaults to `false`; set it with
    /// `#[message(bypass_admission)]` on the type.
    const BYPASSES_ADMISSION: bool = false;

    /// Whether this is the runtime's termination notice, [`Down`]. Set only by that type; the
    /// `#[process]` macro reads it to refuse a handler for `Down` in a non-system process
    /// (compared by type, not by how the type is written).
    #[doc(hidden)]
    const __IS_DOWN: bool = false;

    /// What handling this message costs, in the units a group's cost-budget predicate
    /// counts. Defaults to 1; set it with `#[message(cost = ...)]` on the type.
    #[inline]
    fn cost(&self) -> u64 {
        1
    }
}

/// Marks a process whose state knowingly shares mutable state with other processes.
///
/// This is the paper's section VI-C case: a group of processes around an in-memory database
/// that does its own fine-grained locking, where wrapping the database in one process would
/// cost too much. `#[process(unsafe(shares_state = "why"))]` implements it (the reason is recorded in
/// [`SharesState::REASON`]) and accepts `#[shared]` fields that are not [`Isolated`].
///
/// Such a process runs only in a group built with [`GroupBuilder::shares_state`](crate::GroupBuilder::shares_state), so the
/// sharing stays inside a group that declares it; spawned anywhere else it fails at once
/// ([`Process::SHARES_STATE`](crate::Process::SHARES_STATE) carries the reason to the runtime). Link the processes of that group to each other so that a failure takes all of them
/// down, as the paper recommends: they are not isolated from each other.
///
/// # Safety
///
/// The implementer takes over the isolation argument for the `#[shared]` fields: the shared
/// state must synchronise itself, and no process outside the declaring group may reach it.
pub unsafe trait SharesState: Send + 'static {
    /// Why this process shares state: shown in failures, logs and the docs.
    const REASON: &'static str;
}

/// `unsafe impl Isolated` for plain types without type parameters.
///
/// They are `do_not_recommend`: an error about a non-isolated type then lists the generic
/// containers that *are* isolated (`Arc<T>`, `Box<T>`...), not every integer type.
macro_rules! isolated {
    ($($ty:ty),* $(,)?) => {
        $(
            // SAFETY: each type listed is plain owned data with no interior or shared
            // mutability (numbers, strings, times, paths...): moving it moves all of it. (I8)
            #[diagnostic::do_not_recommend]
            unsafe impl Isolated for $ty {}
        )*
    };
}

// SAFETY: values of these types own all their data and have no interior mutability.
isolated! {
    (), bool, char, f32, f64,
    i8, i16, i32, i64, i128, isize,
    u8, u16, u32, u64, u128, usize,
    NonZeroI8, NonZeroI16, NonZeroI32, NonZeroI64, NonZeroI128, NonZeroIsize,
    NonZeroU8, NonZeroU16, NonZeroU32, NonZeroU64, NonZeroU128, NonZeroUsize,
    str, String, CStr, CString, OsStr, OsString, Path, PathBuf,
    Duration, Instant, SystemTime,
    IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6, Shutdown,
    Ordering, std::convert::Infallible, std::any::TypeId, std::thread::ThreadId,
    std::io::ErrorKind, RandomState, std::hash::DefaultHasher,
    std::process::ExitCode, std::alloc::Layout, std::num::FpCategory, std::num::IntErrorKind,
}

// SAFETY: owned handles on operating-system objects. Moving one moves the program's only handle
// on it; what the kernel shares behind it (a file's contents, a socket's peer) is outside the
// program's memory, like any external system. Handles on process-wide singletons (`Stdin`,
// `Stdout`) are not here: every thread reaches the same one through a lock.
isolated! {
    std::fs::File, std::fs::Metadata, std::fs::Permissions, std::fs::FileType,
    std::net::TcpStream, std::net::TcpListener, std::net::UdpSocket,
    std::process::Child, std::process::ChildStdin, std::process::ChildStdout,
    std::process::ChildStderr, std::process::Command, std::process::ExitStatus,
    std::process::Output, std::process::Stdio,
}

// SAFETY: as above, for Unix handles.
#[cfg(unix)]
isolated! {
    std::os::fd::OwnedFd,
    std::os::unix::net::UnixStream, std::os::unix::net::UnixListener,
    std::os::unix::net::UnixDatagram, std::os::unix::net::SocketAddr,
}

// SAFETY: buffering adapters own their buffer and the reader or writer they wrap. (I8)
unsafe impl<R: Isolated> Isolated for std::io::BufReader<R> {}
// SAFETY: as above. (I8)
unsafe impl<W: Isolated + std::io::Write> Isolated for std::io::BufWriter<W> {}
// SAFETY: as above. (I8)
unsafe impl<W: Isolated + std::io::Write> Isolated for std::io::LineWriter<W> {}
// SAFETY: as above. (I8)
unsafe impl<T: Isolated> Isolated for std::io::Cursor<T> {}
// SAFETY: as above. (I8)
unsafe impl<T: Isolated> Isolated for std::io::Take<T> {}
// SAFETY: as above. (I8)
unsafe impl<T: Isolated, U: Isolated> Isolated for std::io::Chain<T, U> {}

// SAFETY: `Pin` only restricts moving out of the pointer it wraps: `Pin<Box<T>>` owns `T`,
// `Pin<&'static T>` borrows it immutably, exactly like the pointer itself. (I8)
unsafe impl<P: Isolated + std::ops::Deref> Isolated for std::pin::Pin<P> {}

/// `unsafe impl Isolated` for function pointers of every arity up to 8, safe or `unsafe`, Rust
/// or C ABI, and with a first parameter borrowed for any lifetime (`for<'a> fn(&'a T) -> R`).
///
/// A function pointer carries no data at all: what the function reaches through statics is
/// beyond types, and is what `cargo whirl check` looks for.
macro_rules! isolated_fn_pointers {
    ($( ($($arg:ident),*) )*) => {$(
        // Distinct from higher-ranked pointers such as `net::AcceptFn`, which rustc reports
        // here; see the note on the module's impls.
        #[allow(coherence_leak_check)]
        // SAFETY: a function pointer holds no data (I8).
        #[diagnostic::do_not_recommend]
        unsafe impl<Ret: 'static, $($arg: 'static),*> Isolated for fn($($arg),*) -> Ret {}
        // SAFETY: as above. (I8)
        #[diagnostic::do_not_recommend]
        unsafe impl<Ret: 'static, $($arg: 'static),*> Isolated for unsafe fn($($arg),*) -> Ret {}
        // SAFETY: as above. (I8)
        #[diagnostic::do_not_recommend]
        unsafe impl<Ret: 'static, $($arg: 'static),*> Isolated for extern "C" fn($($arg),*) -> Ret {}
        // SAFETY: as above. (I8)
        #[diagnostic::do_not_recommend]
        unsafe impl<Ret: 'static, $($arg: 'static),*> Isolated
            for unsafe extern "C" fn($($arg),*) -> Ret {}
    )*};
}

/// The higher-ranked forms: the first parameter is a reference for any lifetime, and the result
/// may borrow from it (`for<'a> fn(&'a str) -> &'a str`).
macro_rules! isolated_higher_ranked_fn_pointers {
    ($( ($($arg:ident),*) )*) => {$(
        // SAFETY: a function pointer holds no data. (I8)
        #[diagnostic::do_not_recommend]
        #[allow(coherence_leak_check)] // distinct types; see the note on the module's impls
        unsafe impl<Ret: 'static, First: ?Sized + 'static, $($arg: 'static),*> Isolated
            for for<'a> fn(&'a First, $($arg),*) -> Ret {}
        // SAFETY: as above. (I8)
        #[diagnostic::do_not_recommend]
        #[allow(coherence_leak_check)]
        unsafe impl<Ret: 'static, First: ?Sized + 'static, $($arg: 'static),*> Isolated
            for for<'a> fn(&'a mut First, $($arg),*) -> Ret {}
        // SAFETY: as above. (I8)
        #[diagnostic::do_not_recommend]
        #[allow(coherence_leak_check)]
        unsafe impl<Ret: ?Sized + 'static, First: ?Sized + 'static, $($arg: 'static),*> Isolated
            for for<'a> fn(&'a First, $($arg),*) -> &'a Ret {}
    )*};
}

// Plain `fn(A) -> R` and higher-ranked `for<'a> fn(&'a A) -> R` are different types (rustc warns
// that it might one day treat them as overlapping, `coherence_leak_check`, a warning it has
// carried since 2019 for exactly this pattern in many crates): both must be isolated.
isolated_fn_pointers! {
    () (A) (A, B) (A, B, C) (A, B, C, D) (A, B, C, D, E) (A, B, C, D, E, F)
    (A, B, C, D, E, F, G) (A, B, C, D, E, F, G, H)
}
isolated_higher_ranked_fn_pointers! {
    () (B) (B, C) (B, C, D) (B, C, D, E) (B, C, D, E, F)
}

// SAFETY: owning containers: moving one moves everything in it, so they are isolated exactly
// when their elements are. (I8)
unsafe impl<T: ?Sized + Isolated> Isolated for Box<T> {}
// SAFETY: as above. (I8)
unsafe impl<T: Isolated> Isolated for Vec<T> {}
// SAFETY: as above. (I8)
unsafe impl<T: Isolated> Isolated for VecDeque<T> {}
// SAFETY: as above. (I8)
unsafe impl<T: Isolated> Isolated for LinkedList<T> {}
// SAFETY: as above. (I8)
unsafe impl<T: Isolated> Isolated for BinaryHeap<T> {}
// SAFETY: as above. (I8)
unsafe impl<T: Isolated> Isolated for BTreeSet<T> {}
// SAFETY: as above. (I8)
unsafe impl<K: Isolated, V: Isolated> Isolated for BTreeMap<K, V> {}
// SAFETY: as above; the hasher state is owned too. (I8)
unsafe impl<T: Isolated, S: Isolated> Isolated for HashSet<T, S> {}
// SAFETY: as above. (I8)
unsafe impl<K: Isolated, V: Isolated, S: Isolated> Isolated for HashMap<K, V, S> {}
// SAFETY: as above. (I8)
unsafe impl<T: Isolated> Isolated for Option<T> {}
// SAFETY: as above. (I8)
unsafe impl<T: Isolated, E: Isolated> Isolated for Result<T, E> {}
// SAFETY: as above. (I8)
unsafe impl<T: Isolated> Isolated for [T] {}
// SAFETY: as above. (I8)
unsafe impl<T: Isolated, const N: usize> Isolated for [T; N] {}
// SAFETY: as above. (I8)
unsafe impl<T: Isolated> Isolated for Reverse<T> {}
// SAFETY: as above. (I8)
unsafe impl<T: Isolated> Isolated for Wrapping<T> {}
// SAFETY: as above. (I8)
unsafe impl<T: Isolated> Isolated for Saturating<T> {}
// SAFETY: as above. (I8)
unsafe impl<T: Isolated> Isolated for Bound<T> {}
// SAFETY: as above. (I8)
unsafe impl<T: Isolated> Isolated for Range<T> {}
// SAFETY: as above. (I8)
unsafe impl<T: Isolated> Isolated for RangeInclusive<T> {}
// SAFETY: as above. (I8)
unsafe impl<T: Isolated> Isolated for RangeFrom<T> {}
// SAFETY: as above. (I8)
unsafe impl<T: Isolated> Isolated for RangeTo<T> {}
// SAFETY: as above. (I8)
unsafe impl<T: Isolated> Isolated for RangeToInclusive<T> {}

// SAFETY: the handle is the only way to the thread's result, which moves out of it whole when
// joined: the result must be isolated, since it crosses from the thread into the process that
// joins. The thread itself is not a process and shares nothing through the handle. (I8)
unsafe impl<T: Isolated> Isolated for std::thread::JoinHandle<T> {}

// SAFETY: an `io::Error` owns what it holds: an OS error code, a kind with a static message, or
// a boxed custom payload (`Box<dyn Error + Send + Sync>`) that only this value reaches; moving
// the error moves the box. What a custom payload holds is beyond types, like any `dyn Error`:
// see "What whirl checks, and what it cannot". (I8)
#[diagnostic::do_not_recommend]
unsafe impl Isolated for std::io::Error {}

// SAFETY: a zero-sized marker holds no data at all; `Send` is required by the supertrait. (I8)
unsafe impl<T: ?Sized + 'static> Isolated for PhantomData<T> where PhantomData<T>: Send {}
// SAFETY: a hasher builder for `H` holds no data. (I8)
unsafe impl<H: 'static> Isolated for BuildHasherDefault<H> {}

// SAFETY: shared, but immutable: `T: Isolated` excludes interior mutability, and `Sync` is what
// makes sharing `T` between threads sound in the first place. (I8)
unsafe impl<T: ?Sized + Isolated + Sync> Isolated for Arc<T> {}
// SAFETY: as above; a `'static` shared reference never dangles. (`&'static mut T` is not
// included: it is usually a `static mut` in disguise.) (I8)
unsafe impl<T: ?Sized + Isolated + Sync> Isolated for &'static T {}
// SAFETY: either an immutable `'static` borrow (as above) or owned data. (I8)
unsafe impl<B> Isolated for Cow<'static, B>
where
    B: ?Sized + ToOwned + Isolated + Sync,
    B::Owned: Isolated,
{
}

/// `unsafe impl Isolated` for tuples of isolated values. Not `do_not_recommend`: an error about
/// a tuple then names the element that is not isolated (`Rc<u8>` in `(String, Rc<u8>)`).
macro_rules! isolated_tuples {
    ($( ($($name:ident),+) )*) => {
        // SAFETY: a tuple owns its fields; it is isolated when each of them is. (I8)
        $(
            unsafe impl<$($name: Isolated),+> Isolated for ($($name,)+) {}
        )*
    };
}

isolated_tuples! {
    (A)
    (A, B)
    (A, B, C)
    (A, B, C, D)
    (A, B, C, D, E)
    (A, B, C, D, E, F)
    (A, B, C, D, E, F, G)
    (A, B, C, D, E, F, G, H)
    (A, B, C, D, E, F, G, H, I)
    (A, B, C, D, E, F, G, H, I, J)
    (A, B, C, D, E, F, G, H, I, J, K)
    (A, B, C, D, E, F, G, H, I, J, K, L)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Down, Recipient, ReplyTo};

    fn isolated<T: ?Sized + Isolated>() {}

    #[test]
    fn owned_immutable_and_addresses_are_isolated() {
        isolated::<(u8, String, Vec<Option<Box<str>>>)>();
        isolated::<HashMap<String, BTreeSet<u64>>>();
        isolated::<Arc<str>>();
        isolated::<Arc<Vec<PathBuf>>>();
        isolated::<&'static str>();
        isolated::<&'static [u8]>();
        isolated::<Cow<'static, str>>();
        isolated::<[Duration; 4]>();
        isolated::<ReplyTo<Result<u64, String>>>();
        isolated::<Recipient<Down>>();
        isolated::<PhantomData<fn() -> std::rc::Rc<u8>>>();
    }

    #[test]
    fn owned_handles_and_code_are_isolated() {
        isolated::<std::fs::File>();
        isolated::<std::net::TcpStream>();
        isolated::<std::process::ChildStdin>();
        isolated::<std::io::BufReader<std::fs::File>>();
        isolated::<std::pin::Pin<Box<u64>>>();
        isolated::<fn(u8) -> String>();
        isolated::<fn(&str) -> usize>();
        isolated::<for<'a> fn(&'a str) -> &'a str>();
        isolated::<fn(&mut Vec<u8>, usize)>();
        isolated::<unsafe extern "C" fn(i32) -> i32>();
        isolated::<fn(std::rc::Rc<u8>)>();
    }
}
