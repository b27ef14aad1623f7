//! What a handler may answer with: [`Reply`].
//!
//! A handler that returns a value answers the message it handled: `addr.ask(msg).await` and
//! `addr.call(msg)` get that value. Returning `()` answers nothing, and `Result<T, E>` (with
//! `E` convertible into a [`Failure`](crate::Failure)) answers `T` or fails the process, so the
//! value itself must be of a type that is neither: a `Reply`. The trait is implemented for the
//! standard library's owned types (numbers, strings, collections, `Option`, tuples, `Arc` of
//! immutable data...), for the runtime's own (addresses, ids, exit reasons), and by
//! `#[derive(Isolated)]` and `#[derive(Message)]` for yours. A reply crosses a process boundary,
//! so it is [`Isolated`].

use std::borrow::Cow;
use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap, HashSet, LinkedList, VecDeque};
use std::ffi::{CString, OsString};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::num::{
    NonZeroI128, NonZeroI16, NonZeroI32, NonZeroI64, NonZeroI8, NonZeroIsize, NonZeroU128,
    NonZeroU16, NonZeroU32, NonZeroU64, NonZeroU8, NonZeroUsize, Saturating, Wrapping,
};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use super::isolated::Isolated;

/// A value a handler can answer with.
///
/// A handler that returns a value answers the message it handled: `addr.ask(msg).await` and
/// `addr.call(msg)` get that value. `#[derive(Isolated)]` and `#[derive(Message)]` implement
/// it; so does this crate for the standard library's owned types (numbers, strings,
/// collections, `Option`, tuples, `Arc` of immutable data...) and for its own (addresses, ids,
/// exit reasons). `()` and `Result` are deliberately not replies: a handler returning `()`
/// answers nothing, and one returning `Result<T, E>` answers `T` or fails the process. A reply
/// crosses a process boundary, so it is [`Isolated`].
#[diagnostic::on_unimplemented(
    message = "a handler cannot answer with `{Self}`",
    label = "not a reply",
    note = "a handler returns `()`, `Result<T, E>` (answering `T`; an `Err` fails the process), or a reply: derive `Isolated` (or `Message`) on your type to make it one",
    note = "to answer with a `Result` itself, return `Result<Result<T, E2>, Failure>` and send the inner one"
)]
pub trait Reply: Isolated {}

/// `impl Reply` for plain types.
macro_rules! reply {
    ($($ty:ty),* $(,)?) => {
        $(
            #[diagnostic::do_not_recommend]
            impl Reply for $ty {}
        )*
    };
}

reply! {
    bool, char, f32, f64,
    i8, i16, i32, i64, i128, isize,
    u8, u16, u32, u64, u128, usize,
    NonZeroI8, NonZeroI16, NonZeroI32, NonZeroI64, NonZeroI128, NonZeroIsize,
    NonZeroU8, NonZeroU16, NonZeroU32, NonZeroU64, NonZeroU128, NonZeroUsize,
    String, CString, OsString, PathBuf,
    Duration, Instant, SystemTime,
    IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6,
    Ordering, std::convert::Infallible, std::any::TypeId,
    std::fs::File, std::fs::Metadata, std::net::TcpStream, std::net::TcpListener,
    std::net::UdpSocket, std::io::Error, std::process::ExitCode, std::alloc::Layout,
}

// SAFETY: the standard library's error values for parsing, conversion and formatting: a kind,
// a position, or the owned input that failed. None holds a reference or interior mutability. (I8)
isolated_data! {
    std::num::ParseIntError, std::num::ParseFloatError, std::num::TryFromIntError,
    std::str::Utf8Error, std::str::ParseBoolError, std::string::FromUtf8Error,
    std::string::FromUtf16Error, std::char::ParseCharError, std::char::CharTryFromError,
    std::net::AddrParseError, std::time::SystemTimeError, std::time::TryFromFloatSecsError,
    std::array::TryFromSliceError, std::fmt::Error, std::env::VarError, std::ffi::NulError,
    std::ffi::IntoStringError, std::ffi::FromBytesWithNulError, std::alloc::LayoutError,
    std::sync::mpsc::RecvError, std::sync::mpsc::TryRecvError, std::sync::mpsc::RecvTimeoutError,
}

impl<T: ?Sized + Isolated> Reply for Box<T> {}
impl<T: Isolated> Reply for Vec<T> {}
impl<T: Isolated> Reply for VecDeque<T> {}
impl<T: Isolated> Reply for LinkedList<T> {}
impl<T: Isolated> Reply for BinaryHeap<T> {}
impl<T: Isolated> Reply for BTreeSet<T> {}
impl<K: Isolated, V: Isolated> Reply for BTreeMap<K, V> {}
impl<T: Isolated, S: Isolated> Reply for HashSet<T, S> {}
impl<K: Isolated, V: Isolated, S: Isolated> Reply for HashMap<K, V, S> {}
impl<T: Isolated> Reply for Option<T> {}
impl<T: Isolated> Reply for std::thread::JoinHandle<T> {}
impl<T: Isolated, const N: usize> Reply for [T; N] {}
impl<T: Isolated> Reply for Reverse<T> {}
impl<T: Isolated> Reply for Wrapping<T> {}
impl<T: Isolated> Reply for Saturating<T> {}
impl<T: ?Sized + Isolated + Sync> Reply for Arc<T> {}
impl<T: ?Sized + Isolated + Sync> Reply for &'static T {}
impl<B> Reply for Cow<'static, B>
where
    B: ?Sized + ToOwned + Isolated + Sync,
    B::Owned: Isolated,
{
}

/// `impl Reply` for tuples of isolated values.
macro_rules! reply_tuples {
    ($( ($($name:ident),+) )*) => {
        $(
            impl<$($name: Isolated),+> Reply for ($($name,)+) {}
        )*
    };
}

reply_tuples! {
    (A)
    (A, B)
    (A, B, C)
    (A, B, C, D)
    (A, B, C, D, E)
    (A, B, C, D, E, F)
    (A, B, C, D, E, F, G)
    (A, B, C, D, E, F, G, H)
}
