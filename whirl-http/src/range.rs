//! The `Range` request header (RFC 9110 §14.1.2): which byte range of a file a client asks
//! for, and where that range lies in a file of a given length.
//!
//! Only a single range is served. A request for several ranges is answered as if it had
//! none (200 with the whole file), which RFC 9110 §14.2 allows ("a server MAY ignore the
//! Range header field"); it spares the server `multipart/byteranges` bodies, whose sum of
//! overlapping ranges a client could make far larger than the file. A header that is not a
//! valid `bytes` range set is ignored the same way; only a valid range that starts past the
//! end of the file is unsatisfiable (416).

/// A byte range as the client wrote it, before the file's length is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RangeSpec {
    /// `first-last`, both inclusive (`last` may lie past the end: it is clamped).
    FromTo(u64, u64),
    /// `first-`: from `first` to the end.
    From(u64),
    /// `-n`: the last `n` bytes.
    Suffix(u64),
}

/// A range within a file: `first..=last`, `last` below the file's length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteRange {
    /// The first byte's offset.
    pub first: u64,
    /// The last byte's offset (inclusive).
    pub last: u64,
}

isolated!(struct ByteRange { first, last });

impl ByteRange {
    /// How many bytes the range holds (at least one).
    #[allow(clippy::len_without_is_empty)] // never empty: a range holds its first byte
    pub fn len(&self) -> u64 {
        self.last - self.first + 1
    }

    /// The `Content-Range` value of a 206 answer from a file of `total` bytes.
    pub fn content_range(&self, total: u64) -> String {
        format!("bytes {}-{}/{total}", self.first, self.last)
    }
}

/// The one range `field` asks for; `None` when it is to be ignored: another unit, bad
/// syntax, a number that overflows, `first > last`, or more than one range.
pub(crate) fn parse(field: &str) -> Option<RangeSpec> {
    let (unit, set) = field.trim().split_once('=')?;
    if !unit.eq_ignore_ascii_case("bytes") {
        return None;
    }
    // RFC 9110 §5.6.1: a list may hold empty elements, which a recipient skips.
    let mut specs = set.split(',').map(str::trim).filter(|s| !s.is_empty());
    let spec = specs.next()?;
    if specs.next().is_some() {
        return None;
    }
    let (first, last) = spec.split_once('-')?;
    match (first, last) {
        ("", suffix) => digits(suffix).map(RangeSpec::Suffix),
        (first, "") => digits(first).map(RangeSpec::From),
        (first, last) => {
            let (first, last) = (digits(first)?, digits(last)?);
            (first <= last).then_some(RangeSpec::FromTo(first, last))
        }
    }
}

impl RangeSpec {
    /// Where the range lies in a file of `len` bytes; `None` if no byte of it exists
    /// (416), including every range of an empty file and the empty suffix `-0`.
    pub(crate) fn resolve(self, len: u64) -> Option<ByteRange> {
        let end = len.checked_sub(1)?;
        let (first, last) = match self {
            RangeSpec::FromTo(first, last) => (first, last.min(end)),
            RangeSpec::From(first) => (first, end),
            RangeSpec::Suffix(0) => return None,
            RangeSpec::Suffix(n) => (len - n.min(len), end),
        };
        (first <= end).then_some(ByteRange { first, last })
    }
}

/// A non-empty run of ASCII digits that fits in a `u64` (`u64::from_str` would also take a
/// sign).
fn digits(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_ranges_parse() {
        assert_eq!(parse("bytes=0-9"), Some(RangeSpec::FromTo(0, 9)));
        assert_eq!(parse("BYTES=5-"), Some(RangeSpec::From(5)));
        assert_eq!(parse("bytes=-3"), Some(RangeSpec::Suffix(3)));
        assert_eq!(parse(" bytes= 1-1 , "), Some(RangeSpec::FromTo(1, 1)));
    }

    #[test]
    fn ignored_ranges() {
        for field in [
            "",
            "bytes",
            "bytes=",
            "bytes=-",
            "bytes=5-3",
            "bytes=a-b",
            "bytes=+1-2",
            "bytes=1-+2",
            "bytes=1 -2",
            "bytes=0-1,3-4",
            "bytes=0-1,-1",
            "items=0-1",
            "bytes=99999999999999999999-",
            "bytes=0-99999999999999999999",
            "bytes=--1",
        ] {
            assert_eq!(parse(field), None, "{field:?}");
        }
    }

    #[test]
    fn ranges_resolve_against_the_length() {
        let r = |first, last| Some(ByteRange { first, last });
        assert_eq!(RangeSpec::FromTo(0, 9).resolve(100), r(0, 9));
        assert_eq!(RangeSpec::FromTo(90, 1000).resolve(100), r(90, 99));
        assert_eq!(RangeSpec::FromTo(100, 100).resolve(100), None);
        assert_eq!(RangeSpec::From(99).resolve(100), r(99, 99));
        assert_eq!(RangeSpec::From(100).resolve(100), None);
        assert_eq!(RangeSpec::Suffix(3).resolve(100), r(97, 99));
        assert_eq!(RangeSpec::Suffix(500).resolve(100), r(0, 99));
        assert_eq!(RangeSpec::Suffix(0).resolve(100), None);
        assert_eq!(RangeSpec::From(0).resolve(0), None);
        assert_eq!(RangeSpec::Suffix(1).resolve(0), None);
        assert_eq!(
            RangeSpec::FromTo(0, u64::MAX).resolve(u64::MAX),
            r(0, u64::MAX - 1)
        );
    }

    #[test]
    fn content_range_values() {
        let range = ByteRange { first: 0, last: 9 };
        assert_eq!(range.len(), 10);
        assert_eq!(range.content_range(120), "bytes 0-9/120");
    }
}
