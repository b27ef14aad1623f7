//! `Isolated` and `Reply` for the data types of the crates services use most.
//!
//! A `Uuid`, a `DateTime<Utc>` or a `serde_json::Value` is owned data like a `String`, but the
//! orphan rule keeps users from implementing whirl's traits for it, and `#[derive(Isolated)]`
//! cannot see through it. So whirl implements them here, each crate behind a Cargo feature named
//! after it (as serde and sqlx do), with the crate's current major version. Feature names are
//! the crate names:
//!
//! * `arrayvec` 0.7: `ArrayVec<T, N>`, `ArrayString<N>`, `CapacityError<T>`;
//! * `bytes` 1: `Bytes`, `BytesMut`;
//! * `chrono` 0.4: `DateTime<Tz>`, `Utc`, `FixedOffset`, `Local`, `NaiveDate`, `NaiveTime`,
//!   `NaiveDateTime`, `NaiveWeek`, `TimeDelta`, `Weekday`, `Month`, `Months`, `Days`, `IsoWeek`,
//!   `LocalResult<T>`, `SecondsFormat`, the error types;
//! * `compact_str` 0.10: `CompactString`, the error types;
//! * `hashbrown` 0.17: `HashMap<K, V, S>`, `HashSet<T, S>`, `HashTable<T>`, `DefaultHashBuilder`;
//! * `http` 1: `HeaderMap<T>`, `HeaderName`, `HeaderValue`, `Method`, `StatusCode`, `Uri`,
//!   `uri::{Authority, Scheme, PathAndQuery, Port<T>, Parts}`, `Version`, the error types;
//! * `indexmap` 2: `IndexMap<K, V, S>`, `IndexSet<T, S>`, `map::Slice<K, V>`, `set::Slice<T>`;
//! * `ipnet` 2: `IpNet`, `Ipv4Net`, `Ipv6Net`, the address ranges and subnet iterators, the error
//!   types;
//! * `ordered-float` 5: `OrderedFloat<T>`, `NotNan<T>`, `FloatIsNan`, `ParseNotNanError<E>`;
//! * `rust_decimal` 1: `Decimal`, `RoundingStrategy`, `Error`;
//! * `semver` 1: `Version`, `VersionReq`, `Comparator`, `Op`, `Prerelease`, `BuildMetadata`,
//!   `Error`;
//! * `serde_json` 1: `Value`, `Map<String, Value>`, `Number`, `Error`;
//! * `smallvec` 1: `SmallVec<A>`;
//! * `smol_str` 0.3: `SmolStr`;
//! * `time` 0.3: `OffsetDateTime`, `PrimitiveDateTime`, `UtcDateTime`, `Date`, `Time`, `Duration`,
//!   `UtcOffset`, `Month`, `Weekday`, `Error` and the range errors;
//! * `ulid` 3: `Ulid`, `DecodeError`, `EncodeError`;
//! * `url` 2: `Url`, `Host<S>`, `Origin`, `OpaqueOrigin`, `Position`, `ParseError`,
//!   `SyntaxViolation`;
//! * `uuid` 1: `Uuid`, `NonNilUuid`, `fmt::{Hyphenated, Simple, Urn, Braced}`, `Builder`,
//!   `Timestamp`, `NoContext`, `Version`, `Variant`, `Error`.
//!
//! A generic type is isolated exactly when what it holds is: `SmallVec<[T; 4]>` and
//! `HeaderMap<T>` when `T` is, `IndexMap<K, V, S>` when `K`, `V` and the hasher `S` are,
//! `DateTime<Tz>` when the offset it stores, `Tz::Offset`, is. The hash containers of
//! `hashbrown` are isolated with the default allocator only: an allocator is state the map
//! shares with whoever else allocates from it.
//!
//! # What stays refused
//!
//! Whatever holds interior mutability, or a value of a type nobody can see:
//!
//! * `http::Extensions`, and so `http::Request<B>`, `http::Response<B>`,
//!   `http::request::Parts`, `http::response::Parts` and the request and response builders:
//!   extensions are a type-erased map of any `Clone + Send + Sync + 'static` value, an
//!   `Arc<Mutex<_>>` as readily as an id. Send the parts you need (the method, the `Uri`, the
//!   `HeaderMap`, the body as `Bytes`) in a message of your own.
//! * `uuid`'s clock-sequence contexts (`ContextV1`, `ContextV7`, `Context`): they count through
//!   a `Cell` or an atomic, shared by every generator that holds them.
//! * the formatting and parsing helpers of `chrono` and `time` (`DelayedFormat`,
//!   `StrftimeItems`, format descriptions), which borrow.
//! * any of these containers holding a type that is not isolated: `HeaderMap<Arc<Mutex<u8>>>`,
//!   `IndexMap<String, Rc<u8>>`, `SmallVec<[Cell<u8>; 4]>`.
//!
//! Each `unsafe impl` below says why its type holds no shared mutable state; whoever bumps one
//! of these crates to a new major version checks those reasons again against the new one.

#[cfg(feature = "arrayvec")]
mod arrayvec_impls {
    //! Feature `arrayvec`: inline, fixed-capacity vectors and strings.

    use crate::isolation::{Isolated, Reply};
    use arrayvec::{ArrayString, ArrayVec, CapacityError};

    // SAFETY: the elements are stored inline in the value: moving it moves all of them, so it
    // is isolated exactly when they are. (I8)
    unsafe impl<T: Isolated, const N: usize> Isolated for ArrayVec<T, N> {}
    impl<T: Isolated, const N: usize> Reply for ArrayVec<T, N> {}
    // SAFETY: inline bytes of UTF-8, owned. (I8)
    unsafe impl<const N: usize> Isolated for ArrayString<N> {}
    impl<const N: usize> Reply for ArrayString<N> {}
    // SAFETY: the error owns the element that did not fit. (I8)
    unsafe impl<T: Isolated> Isolated for CapacityError<T> {}
    impl<T: Isolated> Reply for CapacityError<T> {}
}

#[cfg(feature = "bytes")]
mod bytes_impls {
    //! Feature `bytes`: reference-counted byte buffers.

    use crate::isolation::{Isolated, Reply};

    // SAFETY: a `Bytes` is immutable shared data, like `Arc<[u8]>`: clones share the buffer and
    // its atomic reference count, but no `Bytes` ever writes to the buffer, and it becomes
    // writable again (`BytesMut::from`, `try_into_mut`) only once the `Bytes` is its last
    // handle. A buffer from `Bytes::from_owner` is the slice its owner lent, kept alive and
    // only read. A `BytesMut` owns its region of a buffer alone: `split_off` and `split_to`
    // hand out disjoint regions, and only the reference count is shared. (I8)
    isolated_data! { bytes::Bytes, bytes::BytesMut }
}

#[cfg(feature = "chrono")]
mod chrono_impls {
    //! Feature `chrono`: dates, times, zones and durations.

    use crate::isolation::{Isolated, Reply};
    use chrono::{DateTime, LocalResult, TimeZone};

    // SAFETY: a `DateTime<Tz>` holds a `NaiveDateTime` and a `Tz::Offset` by value (no time zone
    // object, no reference), so it is isolated when the offset is: `Utc` and `FixedOffset`
    // (the offset of `Local` too) are. (I8)
    unsafe impl<Tz> Isolated for DateTime<Tz>
    where
        Tz: TimeZone + 'static,
        Tz::Offset: Isolated,
    {
    }
    impl<Tz> Reply for DateTime<Tz>
    where
        Tz: TimeZone + 'static,
        Tz::Offset: Isolated,
    {
    }
    // SAFETY: an enum of zero, one or two owned values. (I8)
    unsafe impl<T: Isolated> Isolated for LocalResult<T> {}
    impl<T: Isolated> Reply for LocalResult<T> {}

    // SAFETY: plain values: numbers of days, seconds and nanoseconds, enums, and the zones `Utc`
    // and `Local`, which hold nothing (`Local` asks the operating system each time). The
    // errors are enums without payload. (I8)
    isolated_data! {
        chrono::Utc, chrono::FixedOffset, chrono::Local,
        chrono::NaiveDate, chrono::NaiveTime, chrono::NaiveDateTime, chrono::NaiveWeek,
        chrono::TimeDelta, chrono::Weekday, chrono::Month, chrono::Months, chrono::Days,
        chrono::IsoWeek, chrono::SecondsFormat,
        chrono::ParseError, chrono::format::ParseErrorKind, chrono::ParseMonthError,
        chrono::ParseWeekdayError, chrono::OutOfRange, chrono::OutOfRangeError,
        chrono::RoundingError,
    }
}

#[cfg(feature = "compact_str")]
mod compact_str_impls {
    //! Feature `compact_str`: strings stored inline when short.

    use crate::isolation::{Isolated, Reply};

    // SAFETY: a `CompactString` owns its bytes, inline, on the heap (cloned, never shared) or
    // borrowed from a `&'static str`, which is immutable. The errors hold nothing. (I8)
    isolated_data! {
        compact_str::CompactString, compact_str::ReserveError, compact_str::Utf16Error,
        compact_str::ToCompactStringError,
    }
}

#[cfg(feature = "hashbrown")]
mod hashbrown_impls {
    //! Feature `hashbrown`: the hash tables behind std's, with the default allocator.

    use crate::isolation::{Isolated, Reply};
    use hashbrown::{HashMap, HashSet, HashTable};

    // SAFETY: owning containers, isolated exactly when their elements and their hasher are. Only
    // with the default (global) allocator: the type parameter is left at its default, since a
    // custom allocator is state shared with whatever else allocates from it. (I8)
    unsafe impl<K: Isolated, V: Isolated, S: Isolated> Isolated for HashMap<K, V, S> {}
    impl<K: Isolated, V: Isolated, S: Isolated> Reply for HashMap<K, V, S> {}
    // SAFETY: as above. (I8)
    unsafe impl<T: Isolated, S: Isolated> Isolated for HashSet<T, S> {}
    impl<T: Isolated, S: Isolated> Reply for HashSet<T, S> {}
    // SAFETY: as above; a `HashTable` has no hasher of its own. (I8)
    unsafe impl<T: Isolated> Isolated for HashTable<T> {}
    impl<T: Isolated> Reply for HashTable<T> {}

    // SAFETY: a hasher builder holds its random seeds by value (or nothing, without
    // hashbrown's `default-hasher`). (I8)
    isolated_data! { hashbrown::DefaultHashBuilder }
}

#[cfg(feature = "http")]
mod http_impls {
    //! Feature `http`: the vocabulary types of HTTP; never its extensions.

    use crate::isolation::{Isolated, Reply};
    use http::uri::Port;
    use http::HeaderMap;

    // SAFETY: a header map owns its names (see below), its values of type `T` and its hasher
    // state, so it is isolated when `T` is. (I8)
    unsafe impl<T: Isolated> Isolated for HeaderMap<T> {}
    impl<T: Isolated> Reply for HeaderMap<T> {}
    // SAFETY: a port number and its text, owned when `T` is. (I8)
    unsafe impl<T: Isolated> Isolated for Port<T> {}
    impl<T: Isolated> Reply for Port<T> {}

    // SAFETY: each is owned or immutable shared data: the names, values, URIs and their parts
    // are bytes in a `bytes::Bytes`, which is never written to (see the `bytes` impls), or in a
    // `Box`; a method is an enum or boxed bytes; a status code and a version are numbers. The
    // errors are enums of these errors, without payload. `Extensions`, `Request`, `Response`
    // and their `Parts` are not here: see the module's documentation. (I8)
    isolated_data! {
        http::HeaderName, http::HeaderValue, http::Method, http::StatusCode, http::Version,
        http::Uri, http::uri::Authority, http::uri::Scheme, http::uri::PathAndQuery,
        http::uri::Parts,
        http::Error, http::header::InvalidHeaderName, http::header::InvalidHeaderValue,
        http::header::MaxSizeReached, http::header::ToStrError, http::method::InvalidMethod,
        http::status::InvalidStatusCode, http::uri::InvalidUri, http::uri::InvalidUriParts,
    }
}

#[cfg(feature = "indexmap")]
mod indexmap_impls {
    //! Feature `indexmap`: hash maps and sets in insertion order.

    use crate::isolation::{Isolated, Reply};
    use indexmap::{map, set, IndexMap, IndexSet};

    // SAFETY: owning containers (a `Vec` of entries and a table of indices), isolated exactly
    // when their keys, values and hasher are. (I8)
    unsafe impl<K: Isolated, V: Isolated, S: Isolated> Isolated for IndexMap<K, V, S> {}
    impl<K: Isolated, V: Isolated, S: Isolated> Reply for IndexMap<K, V, S> {}
    // SAFETY: as above. (I8)
    unsafe impl<T: Isolated, S: Isolated> Isolated for IndexSet<T, S> {}
    impl<T: Isolated, S: Isolated> Reply for IndexSet<T, S> {}
    // SAFETY: a slice of owned entries, as `[T]` is (held as `Box<Slice<K, V>>`). (I8)
    unsafe impl<K: Isolated, V: Isolated> Isolated for map::Slice<K, V> {}
    // SAFETY: as above. (I8)
    unsafe impl<T: Isolated> Isolated for set::Slice<T> {}
}

#[cfg(feature = "ipnet")]
mod ipnet_impls {
    //! Feature `ipnet`: iP networks and address ranges.

    use crate::isolation::{Isolated, Reply};

    // SAFETY: addresses and prefix lengths by value; the ranges and subnet iterators hold two
    // addresses and a prefix length; the errors hold nothing. (I8)
    isolated_data! {
        ipnet::IpNet, ipnet::Ipv4Net, ipnet::Ipv6Net,
        ipnet::IpAddrRange, ipnet::Ipv4AddrRange, ipnet::Ipv6AddrRange,
        ipnet::IpSubnets, ipnet::Ipv4Subnets, ipnet::Ipv6Subnets,
        ipnet::AddrParseError, ipnet::PrefixLenError,
    }
}

#[cfg(feature = "ordered-float")]
mod ordered_float_impls {
    //! Feature `ordered-float`: floats with a total order.

    use crate::isolation::{Isolated, Reply};
    use ordered_float::{NotNan, OrderedFloat, ParseNotNanError};

    // SAFETY: a wrapper around the float it holds by value. (I8)
    unsafe impl<T: Isolated> Isolated for OrderedFloat<T> {}
    impl<T: Isolated> Reply for OrderedFloat<T> {}
    // SAFETY: as above. (I8)
    unsafe impl<T: Isolated> Isolated for NotNan<T> {}
    impl<T: Isolated> Reply for NotNan<T> {}
    // SAFETY: the float's own parse error, by value, or nothing. (I8)
    unsafe impl<E: Isolated> Isolated for ParseNotNanError<E> {}
    impl<E: Isolated> Reply for ParseNotNanError<E> {}

    // SAFETY: an error without payload. (I8)
    isolated_data! { ordered_float::FloatIsNan }
}

#[cfg(feature = "rust_decimal")]
mod rust_decimal_impls {
    //! Feature `rust_decimal`: decimal numbers.

    use crate::isolation::{Isolated, Reply};

    // SAFETY: a `Decimal` is 128 bits by value; the error is an enum holding at most a
    // `String`. (I8)
    isolated_data! {
        rust_decimal::Decimal, rust_decimal::RoundingStrategy, rust_decimal::Error,
    }
}

#[cfg(feature = "semver")]
mod semver_impls {
    //! Feature `semver`: versions and version requirements.

    use crate::isolation::{Isolated, Reply};

    // SAFETY: numbers, and identifiers inline or in a heap allocation of their own (cloning one
    // copies the allocation; nothing is shared); a requirement is a `Vec` of comparators; the
    // error is an enum of positions and characters. (I8)
    isolated_data! {
        semver::Version, semver::VersionReq, semver::Comparator, semver::Op,
        semver::Prerelease, semver::BuildMetadata, semver::Error,
    }
}

#[cfg(feature = "serde_json")]
mod serde_json_impls {
    //! Feature `serde_json`: jSON values.

    use crate::isolation::{Isolated, Reply};

    // SAFETY: a `Value` is a tree of owned data: numbers, `String`s, `Vec`s and maps of further
    // values (a `BTreeMap`, or with `preserve_order` an `IndexMap`), as is a `Map<String, Value>`.
    // An `Error` owns its code and position, or the `io::Error` a reader failed with, which
    // owns its payload (see the impl for `std::io::Error`). (I8)
    isolated_data! {
        serde_json::Value, serde_json::Map<String, serde_json::Value>, serde_json::Number,
        serde_json::Error,
    }
}

#[cfg(feature = "smallvec")]
mod smallvec_impls {
    //! Feature `smallvec`: vectors stored inline when short.

    use crate::isolation::{Isolated, Reply};
    use smallvec::{Array, SmallVec};

    // SAFETY: the items are inline in the value or in a heap buffer it owns alone, so it is
    // isolated exactly when they are. (I8)
    unsafe impl<A: Array + 'static> Isolated for SmallVec<A> where A::Item: Isolated {}
    impl<A: Array + 'static> Reply for SmallVec<A> where A::Item: Isolated {}
}

#[cfg(feature = "smol_str")]
mod smol_str_impls {
    //! Feature `smol_str`: immutable strings, cheap to clone.

    use crate::isolation::{Isolated, Reply};

    // SAFETY: a `SmolStr` is immutable shared data: its text is inline, a `&'static str`, or an
    // `Arc<str>` that clones share and nobody writes to. (I8)
    isolated_data! { smol_str::SmolStr }
}

#[cfg(feature = "time")]
mod time_impls {
    //! Feature `time`: dates, times, offsets and durations.

    use crate::isolation::{Isolated, Reply};

    // SAFETY: plain values: dates, times and offsets packed into integers, durations as
    // seconds and nanoseconds, enums. The errors hold `&'static str` names, numbers and
    // strings; with time's `formatting` feature an `Error` may hold the `io::Error` a writer
    // failed with, which owns its payload (see the impl for `std::io::Error`). (I8)
    isolated_data! {
        time::OffsetDateTime, time::PrimitiveDateTime, time::UtcDateTime, time::Date,
        time::Time, time::Duration, time::UtcOffset, time::Month, time::Weekday, time::Error,
        time::error::ComponentRange, time::error::ConversionRange,
        time::error::DifferentVariant, time::error::InvalidVariant,
    }
}

#[cfg(feature = "ulid")]
mod ulid_impls {
    //! Feature `ulid`: lexicographically sortable identifiers.

    use crate::isolation::{Isolated, Reply};

    // SAFETY: a `Ulid` is a `u128`; the errors are enums without payload. (I8)
    isolated_data! { ulid::Ulid, ulid::DecodeError, ulid::EncodeError }
}

#[cfg(feature = "url")]
mod url_impls {
    //! Feature `url`: uRLs.

    use crate::isolation::{Isolated, Reply};
    use url::Host;

    // SAFETY: a domain name of type `S`, or an address by value: owned when `S` is. (I8)
    unsafe impl<S: Isolated> Isolated for Host<S> {}
    impl<S: Isolated> Reply for Host<S> {}

    // SAFETY: a `Url` is a `String` and the offsets into it; an `Origin` is a scheme, a
    // `Host<String>` and a port, or an opaque number; the rest are enums without payload. (I8)
    isolated_data! {
        url::Url, url::Origin, url::OpaqueOrigin, url::Position, url::ParseError,
        url::SyntaxViolation,
    }
}

#[cfg(feature = "uuid")]
mod uuid_impls {
    //! Feature `uuid`: uUIDs.

    use crate::isolation::{Isolated, Reply};

    // SAFETY: a UUID is 16 bytes by value, and so is each of its formatting adapters and its
    // builder; a `Timestamp` is numbers; `NoContext` holds nothing; the error is an enum of
    // numbers, characters and `&'static str`. The counting contexts (`ContextV1`,
    // `ContextV7`) are not here: they count through a `Cell` or an atomic. (I8)
    isolated_data! {
        uuid::Uuid, uuid::NonNilUuid, uuid::fmt::Hyphenated, uuid::fmt::Simple, uuid::fmt::Urn,
        uuid::fmt::Braced, uuid::Builder, uuid::Timestamp, uuid::NoContext, uuid::Version,
        uuid::Variant, uuid::Error,
    }
}
