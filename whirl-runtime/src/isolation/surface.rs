//! The isolation surface, pinned down at compile time: which types are [`Isolated`] (and
//! [`Reply`]) and which must never be.
//!
//! Every line is a static assertion (`static_assertions`), so this module has no tests to
//! run: it fails to *compile* the moment an impl goes missing, or one appears for a type with
//! shared mutable state (a blanket impl over `Send + Sync` would make `Arc<Mutex<u8>>`
//! isolated, and the negative half catches it). The data-crate types are checked under their
//! features, which the crate's dev-dependency on `whirl` turns on, so `cargo test` checks
//! them all.

use std::borrow::Cow;
use std::cell::{Cell, OnceCell, RefCell, UnsafeCell};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap, HashSet, LinkedList, VecDeque};
use std::ffi::{CStr, CString, OsStr, OsString};
use std::marker::PhantomData;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::num::{NonZeroU64, Saturating, Wrapping};
use std::ops::{Bound, Range, RangeInclusive};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{
    AtomicBool, AtomicI16, AtomicI32, AtomicI64, AtomicI8, AtomicIsize, AtomicPtr, AtomicU16,
    AtomicU32, AtomicU64, AtomicU8, AtomicUsize,
};
use std::sync::{mpsc, Arc, Barrier, Condvar, LazyLock, Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant, SystemTime};

use static_assertions::{assert_impl_all, assert_not_impl_any};

use super::{Isolated, Reply};

// Owned data: primitives, strings, times, paths, addresses.
assert_impl_all!(std::io::Error: Isolated, Reply);
assert_impl_all!(std::thread::JoinHandle<u64>: Isolated, Reply);
assert_impl_all!(std::num::ParseIntError: Isolated, Reply);
assert_impl_all!(std::string::FromUtf8Error: Isolated, Reply);
assert_impl_all!(std::net::AddrParseError: Isolated, Reply);
assert_impl_all!(std::env::VarError: Isolated, Reply);
assert_impl_all!(Result<u64, std::num::ParseIntError>: Isolated);
assert_not_impl_any!(std::thread::JoinHandle<Rc<u8>>: Isolated);
assert_impl_all!(crate::control::RuntimeStats: Isolated, Reply);
assert_impl_all!(crate::control::GroupStats: Isolated, Reply);
assert_impl_all!(crate::ShutdownReport: Isolated, Reply);
assert_impl_all!(crate::failures::FailureReport: Isolated, Reply);
assert_impl_all!((): Isolated);
assert_impl_all!(bool: Isolated, Reply);
assert_impl_all!(char: Isolated, Reply);
assert_impl_all!(f32: Isolated, Reply);
assert_impl_all!(f64: Isolated, Reply);
assert_impl_all!(i8: Isolated, Reply);
assert_impl_all!(i16: Isolated, Reply);
assert_impl_all!(i32: Isolated, Reply);
assert_impl_all!(i64: Isolated, Reply);
assert_impl_all!(i128: Isolated, Reply);
assert_impl_all!(isize: Isolated, Reply);
assert_impl_all!(u8: Isolated, Reply);
assert_impl_all!(u16: Isolated, Reply);
assert_impl_all!(u32: Isolated, Reply);
assert_impl_all!(u64: Isolated, Reply);
assert_impl_all!(u128: Isolated, Reply);
assert_impl_all!(usize: Isolated, Reply);
assert_impl_all!(NonZeroU64: Isolated, Reply);
assert_impl_all!(str: Isolated);
assert_impl_all!(String: Isolated, Reply);
assert_impl_all!(Box<str>: Isolated, Reply);
assert_impl_all!(CStr: Isolated);
assert_impl_all!(CString: Isolated, Reply);
assert_impl_all!(OsStr: Isolated);
assert_impl_all!(OsString: Isolated, Reply);
assert_impl_all!(Path: Isolated);
assert_impl_all!(PathBuf: Isolated, Reply);
assert_impl_all!(Duration: Isolated, Reply);
assert_impl_all!(Instant: Isolated, Reply);
assert_impl_all!(SystemTime: Isolated, Reply);
assert_impl_all!(IpAddr: Isolated, Reply);
assert_impl_all!(Ipv4Addr: Isolated, Reply);
assert_impl_all!(Ipv6Addr: Isolated, Reply);
assert_impl_all!(SocketAddr: Isolated, Reply);
assert_impl_all!(SocketAddrV4: Isolated, Reply);
assert_impl_all!(SocketAddrV6: Isolated, Reply);
assert_impl_all!(std::cmp::Ordering: Isolated, Reply);
assert_impl_all!(std::convert::Infallible: Isolated, Reply);
assert_impl_all!(std::any::TypeId: Isolated, Reply);
assert_impl_all!(std::io::ErrorKind: Isolated);
assert_impl_all!(std::hash::RandomState: Isolated);

// Collections and wrappers of isolated things.
assert_impl_all!(Box<u64>: Isolated, Reply);
assert_impl_all!(Box<[u8]>: Isolated, Reply);
assert_impl_all!(Vec<String>: Isolated, Reply);
assert_impl_all!(VecDeque<u8>: Isolated, Reply);
assert_impl_all!(LinkedList<u8>: Isolated, Reply);
assert_impl_all!(BinaryHeap<u8>: Isolated, Reply);
assert_impl_all!(BTreeSet<String>: Isolated, Reply);
assert_impl_all!(BTreeMap<String, Vec<u8>>: Isolated, Reply);
assert_impl_all!(HashSet<String>: Isolated, Reply);
assert_impl_all!(HashMap<String, BTreeSet<u64>>: Isolated, Reply);
assert_impl_all!(Option<String>: Isolated, Reply);
assert_impl_all!(Option<Box<str>>: Isolated, Reply);
assert_impl_all!(Result<u64, String>: Isolated);
assert_impl_all!([u8]: Isolated);
assert_impl_all!([Duration; 4]: Isolated, Reply);
assert_impl_all!((u8,): Isolated, Reply);
assert_impl_all!((u8, String, Vec<Option<Box<str>>>): Isolated, Reply);
assert_impl_all!((u8, u8, u8, u8, u8, u8, u8, u8, u8, u8, u8, u8): Isolated);
assert_impl_all!(Reverse<u8>: Isolated, Reply);
assert_impl_all!(Wrapping<u8>: Isolated, Reply);
assert_impl_all!(Saturating<u8>: Isolated, Reply);
assert_impl_all!(Bound<u8>: Isolated);
assert_impl_all!(Range<u64>: Isolated);
assert_impl_all!(RangeInclusive<u64>: Isolated);
assert_impl_all!(PhantomData<fn() -> Rc<u8>>: Isolated);
assert_impl_all!(std::pin::Pin<Box<u64>>: Isolated);

// Immutable shared data.
assert_impl_all!(Arc<str>: Isolated, Reply);
assert_impl_all!(Arc<[u8]>: Isolated, Reply);
assert_impl_all!(Arc<Vec<PathBuf>>: Isolated, Reply);
assert_impl_all!(&'static str: Isolated, Reply);
assert_impl_all!(&'static [u8]: Isolated, Reply);
assert_impl_all!(Cow<'static, str>: Isolated, Reply);
assert_impl_all!(Cow<'static, [u8]>: Isolated, Reply);

// Owned handles on the operating system.
assert_impl_all!(std::fs::File: Isolated, Reply);
assert_impl_all!(std::fs::Metadata: Isolated, Reply);
assert_impl_all!(std::net::TcpStream: Isolated, Reply);
assert_impl_all!(std::net::TcpListener: Isolated, Reply);
assert_impl_all!(std::net::UdpSocket: Isolated, Reply);
assert_impl_all!(std::process::Child: Isolated);
assert_impl_all!(std::process::ChildStdin: Isolated);
assert_impl_all!(std::io::BufReader<std::fs::File>: Isolated);
assert_impl_all!(std::io::Cursor<Vec<u8>>: Isolated);
#[cfg(unix)]
assert_impl_all!(std::os::fd::OwnedFd: Isolated);
#[cfg(unix)]
assert_impl_all!(std::os::unix::net::UnixStream: Isolated);

// Code without data.
assert_impl_all!(fn() -> (): Isolated);
assert_impl_all!(fn(u8) -> String: Isolated);
assert_impl_all!(fn(&str) -> usize: Isolated);
assert_impl_all!(for<'a> fn(&'a str) -> &'a str: Isolated);
assert_impl_all!(unsafe extern "C" fn(i32) -> i32: Isolated);
assert_impl_all!(fn(Rc<u8>) -> (): Isolated);

// Shared mutable state, and whatever holds it: never isolated.
assert_not_impl_any!(Rc<u8>: Isolated);
assert_not_impl_any!(Rc<str>: Isolated);
assert_not_impl_any!(std::rc::Weak<u8>: Isolated);
assert_not_impl_any!(std::sync::Weak<u8>: Isolated);
assert_not_impl_any!(Cell<u8>: Isolated);
assert_not_impl_any!(RefCell<u8>: Isolated);
assert_not_impl_any!(UnsafeCell<u8>: Isolated);
assert_not_impl_any!(Mutex<u8>: Isolated);
assert_not_impl_any!(RwLock<u8>: Isolated);
assert_not_impl_any!(OnceCell<u8>: Isolated);
assert_not_impl_any!(OnceLock<u8>: Isolated);
assert_not_impl_any!(LazyLock<u8>: Isolated);
assert_not_impl_any!(Condvar: Isolated);
assert_not_impl_any!(Barrier: Isolated);
assert_not_impl_any!(AtomicBool: Isolated);
assert_not_impl_any!(AtomicI8: Isolated);
assert_not_impl_any!(AtomicI16: Isolated);
assert_not_impl_any!(AtomicI32: Isolated);
assert_not_impl_any!(AtomicI64: Isolated);
assert_not_impl_any!(AtomicIsize: Isolated);
assert_not_impl_any!(AtomicU8: Isolated);
assert_not_impl_any!(AtomicU16: Isolated);
assert_not_impl_any!(AtomicU32: Isolated);
assert_not_impl_any!(AtomicU64: Isolated);
assert_not_impl_any!(AtomicUsize: Isolated);
assert_not_impl_any!(AtomicPtr<u8>: Isolated);
assert_not_impl_any!(Arc<Mutex<u8>>: Isolated, Reply);
assert_not_impl_any!(Arc<RwLock<Vec<u8>>>: Isolated);
assert_not_impl_any!(Arc<AtomicU64>: Isolated, Reply);
assert_not_impl_any!(Arc<RefCell<u8>>: Isolated);
assert_not_impl_any!(Arc<OnceLock<String>>: Isolated);
assert_not_impl_any!(&'static AtomicU64: Isolated);
assert_not_impl_any!(&'static Mutex<u8>: Isolated);
assert_not_impl_any!(Vec<Rc<u8>>: Isolated, Reply);
assert_not_impl_any!(Option<Box<RefCell<u8>>>: Isolated, Reply);
assert_not_impl_any!((String, Rc<u8>): Isolated);
assert_not_impl_any!([Cell<u8>; 4]: Isolated);
assert_not_impl_any!(HashMap<String, Arc<Mutex<u8>>>: Isolated);
assert_not_impl_any!(Cow<'static, [Cell<u8>]>: Isolated);
assert_not_impl_any!(mpsc::Sender<u8>: Isolated);
assert_not_impl_any!(mpsc::SyncSender<u8>: Isolated);
assert_not_impl_any!(mpsc::Receiver<u8>: Isolated);
assert_not_impl_any!(*const u8: Isolated);
assert_not_impl_any!(*mut u8: Isolated);
assert_not_impl_any!(&'static mut u8: Isolated);
assert_not_impl_any!(&'static mut String: Isolated);
assert_not_impl_any!(std::io::Stdin: Isolated);
assert_not_impl_any!(std::io::Stdout: Isolated);
assert_not_impl_any!(std::io::Stderr: Isolated);
assert_not_impl_any!(Box<dyn std::any::Any + Send>: Isolated);
assert_not_impl_any!(Box<dyn Fn() + Send>: Isolated);

// Not replies: `()` answers nothing and `Result` answers its `Ok` or fails the process.
assert_not_impl_any!((): Reply);
assert_not_impl_any!(Result<u64, String>: Reply);

#[cfg(feature = "arrayvec")]
mod arrayvec {
    use super::*;
    use ::arrayvec::{ArrayString, ArrayVec, CapacityError};

    assert_impl_all!(ArrayVec<u32, 8>: Isolated, Reply);
    assert_impl_all!(ArrayVec<String, 2>: Isolated, Reply);
    assert_impl_all!(ArrayString<16>: Isolated, Reply);
    assert_impl_all!(CapacityError<u8>: Isolated, Reply);
    assert_not_impl_any!(ArrayVec<Rc<u8>, 2>: Isolated, Reply);
    assert_not_impl_any!(ArrayVec<Arc<Mutex<u8>>, 2>: Isolated);
}

#[cfg(feature = "bytes")]
mod bytes {
    use super::*;
    use ::bytes::{Bytes, BytesMut};

    assert_impl_all!(Bytes: Isolated, Reply);
    assert_impl_all!(BytesMut: Isolated, Reply);
    assert_impl_all!(Vec<Bytes>: Isolated, Reply);
}

#[cfg(feature = "chrono")]
mod chrono {
    use super::*;
    use ::chrono::{
        DateTime, Days, FixedOffset, IsoWeek, Local, LocalResult, Month, Months, NaiveDate,
        NaiveDateTime, NaiveTime, NaiveWeek, ParseError, TimeDelta, Utc, Weekday,
    };

    assert_impl_all!(DateTime<Utc>: Isolated, Reply);
    assert_impl_all!(DateTime<FixedOffset>: Isolated, Reply);
    assert_impl_all!(DateTime<Local>: Isolated, Reply);
    assert_impl_all!(Utc: Isolated, Reply);
    assert_impl_all!(FixedOffset: Isolated, Reply);
    assert_impl_all!(Local: Isolated, Reply);
    assert_impl_all!(NaiveDate: Isolated, Reply);
    assert_impl_all!(NaiveTime: Isolated, Reply);
    assert_impl_all!(NaiveDateTime: Isolated, Reply);
    assert_impl_all!(NaiveWeek: Isolated, Reply);
    assert_impl_all!(TimeDelta: Isolated, Reply);
    assert_impl_all!(Weekday: Isolated, Reply);
    assert_impl_all!(Month: Isolated, Reply);
    assert_impl_all!(Months: Isolated, Reply);
    assert_impl_all!(Days: Isolated, Reply);
    assert_impl_all!(IsoWeek: Isolated, Reply);
    assert_impl_all!(ParseError: Isolated, Reply);
    assert_impl_all!(::chrono::OutOfRange: Isolated, Reply);
    assert_impl_all!(::chrono::RoundingError: Isolated, Reply);
    assert_impl_all!(LocalResult<DateTime<Utc>>: Isolated, Reply);
    assert_impl_all!(Option<DateTime<Utc>>: Isolated, Reply);
}

#[cfg(feature = "compact_str")]
mod compact_str {
    use super::*;
    use ::compact_str::{CompactString, ReserveError};

    assert_impl_all!(CompactString: Isolated, Reply);
    assert_impl_all!(ReserveError: Isolated, Reply);
}

#[cfg(feature = "hashbrown")]
mod hashbrown {
    use super::*;
    use ::hashbrown::{DefaultHashBuilder, HashMap, HashSet, HashTable};

    assert_impl_all!(HashMap<String, u64>: Isolated, Reply);
    assert_impl_all!(HashMap<String, u64, std::hash::RandomState>: Isolated, Reply);
    assert_impl_all!(HashSet<String>: Isolated, Reply);
    assert_impl_all!(HashTable<(u64, String)>: Isolated, Reply);
    assert_impl_all!(DefaultHashBuilder: Isolated, Reply);
    assert_not_impl_any!(HashMap<String, Rc<u8>>: Isolated, Reply);
    assert_not_impl_any!(HashSet<Arc<Mutex<u8>>>: Isolated);
    assert_not_impl_any!(HashTable<Cell<u8>>: Isolated);
}

#[cfg(feature = "http")]
mod http {
    use super::*;
    use ::http::uri::{Authority, PathAndQuery, Scheme};
    use ::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri, Version};

    assert_impl_all!(HeaderMap: Isolated, Reply);
    assert_impl_all!(HeaderMap<String>: Isolated, Reply);
    assert_impl_all!(HeaderName: Isolated, Reply);
    assert_impl_all!(HeaderValue: Isolated, Reply);
    assert_impl_all!(Method: Isolated, Reply);
    assert_impl_all!(StatusCode: Isolated, Reply);
    assert_impl_all!(Uri: Isolated, Reply);
    assert_impl_all!(Authority: Isolated, Reply);
    assert_impl_all!(Scheme: Isolated, Reply);
    assert_impl_all!(PathAndQuery: Isolated, Reply);
    assert_impl_all!(::http::uri::Parts: Isolated, Reply);
    assert_impl_all!(::http::uri::Port<String>: Isolated, Reply);
    assert_impl_all!(Version: Isolated, Reply);
    assert_impl_all!(::http::Error: Isolated, Reply);
    assert_impl_all!(::http::header::InvalidHeaderValue: Isolated, Reply);
    // Extensions are a type-erased map of any `Clone + Send + Sync` value.
    assert_not_impl_any!(::http::Extensions: Isolated, Reply);
    assert_not_impl_any!(::http::Request<()>: Isolated, Reply);
    assert_not_impl_any!(::http::Request<String>: Isolated, Reply);
    assert_not_impl_any!(::http::Response<()>: Isolated, Reply);
    assert_not_impl_any!(::http::request::Parts: Isolated, Reply);
    assert_not_impl_any!(::http::response::Parts: Isolated, Reply);
    assert_not_impl_any!(::http::request::Builder: Isolated);
    assert_not_impl_any!(HeaderMap<Arc<Mutex<u8>>>: Isolated, Reply);
    assert_not_impl_any!(HeaderMap<Rc<str>>: Isolated);
}

#[cfg(feature = "indexmap")]
mod indexmap {
    use super::*;
    use ::indexmap::{map, set, IndexMap, IndexSet};

    assert_impl_all!(IndexMap<String, u64>: Isolated, Reply);
    assert_impl_all!(IndexMap<String, Vec<String>, std::hash::RandomState>: Isolated, Reply);
    assert_impl_all!(IndexSet<String>: Isolated, Reply);
    assert_impl_all!(Box<map::Slice<String, u64>>: Isolated, Reply);
    assert_impl_all!(Box<set::Slice<String>>: Isolated, Reply);
    assert_not_impl_any!(IndexMap<String, Rc<u8>>: Isolated, Reply);
    assert_not_impl_any!(IndexSet<Arc<AtomicU64>>: Isolated);
}

#[cfg(feature = "ipnet")]
mod ipnet {
    use super::*;
    use ::ipnet::{AddrParseError, IpNet, Ipv4Net, Ipv6Net};

    assert_impl_all!(IpNet: Isolated, Reply);
    assert_impl_all!(Ipv4Net: Isolated, Reply);
    assert_impl_all!(Ipv6Net: Isolated, Reply);
    assert_impl_all!(::ipnet::Ipv4AddrRange: Isolated, Reply);
    assert_impl_all!(::ipnet::IpSubnets: Isolated, Reply);
    assert_impl_all!(AddrParseError: Isolated, Reply);
}

#[cfg(feature = "ordered-float")]
mod ordered_float {
    use super::*;
    use ::ordered_float::{FloatIsNan, NotNan, OrderedFloat};

    assert_impl_all!(OrderedFloat<f64>: Isolated, Reply);
    assert_impl_all!(OrderedFloat<f32>: Isolated, Reply);
    assert_impl_all!(NotNan<f64>: Isolated, Reply);
    assert_impl_all!(FloatIsNan: Isolated, Reply);
    assert_impl_all!(BTreeMap<OrderedFloat<f64>, String>: Isolated, Reply);
}

#[cfg(feature = "rust_decimal")]
mod rust_decimal {
    use super::*;
    use ::rust_decimal::{Decimal, RoundingStrategy};

    assert_impl_all!(Decimal: Isolated, Reply);
    assert_impl_all!(RoundingStrategy: Isolated, Reply);
    assert_impl_all!(::rust_decimal::Error: Isolated, Reply);
}

#[cfg(feature = "semver")]
mod semver {
    use super::*;
    use ::semver::{BuildMetadata, Comparator, Op, Prerelease, Version, VersionReq};

    assert_impl_all!(Version: Isolated, Reply);
    assert_impl_all!(VersionReq: Isolated, Reply);
    assert_impl_all!(Comparator: Isolated, Reply);
    assert_impl_all!(Op: Isolated, Reply);
    assert_impl_all!(Prerelease: Isolated, Reply);
    assert_impl_all!(BuildMetadata: Isolated, Reply);
    assert_impl_all!(::semver::Error: Isolated, Reply);
}

#[cfg(feature = "serde_json")]
mod serde_json {
    use super::*;
    use ::serde_json::{Map, Number, Value};

    assert_impl_all!(Value: Isolated, Reply);
    assert_impl_all!(Map<String, Value>: Isolated, Reply);
    assert_impl_all!(Number: Isolated, Reply);
    assert_impl_all!(::serde_json::Error: Isolated, Reply);
    assert_impl_all!(Vec<Value>: Isolated, Reply);
    assert_not_impl_any!(Arc<Mutex<Value>>: Isolated);
}

#[cfg(feature = "smallvec")]
mod smallvec {
    use super::*;
    use ::smallvec::SmallVec;

    assert_impl_all!(SmallVec<[u32; 4]>: Isolated, Reply);
    assert_impl_all!(SmallVec<[String; 2]>: Isolated, Reply);
    assert_not_impl_any!(SmallVec<[Cell<u8>; 4]>: Isolated, Reply);
    assert_not_impl_any!(SmallVec<[Rc<u8>; 4]>: Isolated);
}

#[cfg(feature = "smol_str")]
mod smol_str {
    use super::*;

    assert_impl_all!(::smol_str::SmolStr: Isolated, Reply);
}

#[cfg(feature = "time")]
mod time {
    use super::*;
    use ::time::{
        Date, Month, OffsetDateTime, PrimitiveDateTime, Time, UtcDateTime, UtcOffset, Weekday,
    };

    assert_impl_all!(OffsetDateTime: Isolated, Reply);
    assert_impl_all!(PrimitiveDateTime: Isolated, Reply);
    assert_impl_all!(UtcDateTime: Isolated, Reply);
    assert_impl_all!(Date: Isolated, Reply);
    assert_impl_all!(Time: Isolated, Reply);
    assert_impl_all!(::time::Duration: Isolated, Reply);
    assert_impl_all!(UtcOffset: Isolated, Reply);
    assert_impl_all!(Month: Isolated, Reply);
    assert_impl_all!(Weekday: Isolated, Reply);
    assert_impl_all!(::time::error::ComponentRange: Isolated, Reply);
    assert_impl_all!(::time::Error: Isolated, Reply);
}

#[cfg(feature = "ulid")]
mod ulid {
    use super::*;

    assert_impl_all!(::ulid::Ulid: Isolated, Reply);
    assert_impl_all!(::ulid::DecodeError: Isolated, Reply);
}

#[cfg(feature = "url")]
mod url {
    use super::*;
    use ::url::{Host, Origin, ParseError, Position, Url};

    assert_impl_all!(Url: Isolated, Reply);
    assert_impl_all!(Host<String>: Isolated, Reply);
    assert_impl_all!(Host<&'static str>: Isolated, Reply);
    assert_impl_all!(Origin: Isolated, Reply);
    assert_impl_all!(Position: Isolated, Reply);
    assert_impl_all!(ParseError: Isolated, Reply);
    assert_not_impl_any!(Host<Rc<str>>: Isolated);
}

#[cfg(feature = "uuid")]
mod uuid {
    use super::*;
    use ::uuid::fmt::{Braced, Hyphenated, Simple, Urn};
    use ::uuid::{NonNilUuid, Uuid};

    assert_impl_all!(Uuid: Isolated, Reply);
    assert_impl_all!(NonNilUuid: Isolated, Reply);
    assert_impl_all!(Hyphenated: Isolated, Reply);
    assert_impl_all!(Simple: Isolated, Reply);
    assert_impl_all!(Urn: Isolated, Reply);
    assert_impl_all!(Braced: Isolated, Reply);
    assert_impl_all!(::uuid::Error: Isolated, Reply);
    assert_impl_all!(Option<Uuid>: Isolated, Reply);
    assert_impl_all!(HashMap<Uuid, String>: Isolated, Reply);
}
