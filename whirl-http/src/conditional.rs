//! Conditional and range requests for files (RFC 9110 §13, §14): a file's validators
//! (`ETag`, `Last-Modified`) and what a GET or HEAD gets given its `If-None-Match`,
//! `If-Modified-Since`, `Range` and `If-Range`: the whole file, one byte range, 304 or 416.
//!
//! Pure decisions on header values and file metadata; reading the file is the caller's job,
//! so that a 304 or a range never reads more than it sends.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::range::{self, ByteRange};
use crate::{date, Method, Request};

/// What identifies one version of a file (more validators may be added, hence
/// `#[non_exhaustive]`: build it with [`Validators::new`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Validators {
    /// A strong entity tag, quoted: the modification time to the nanosecond and the length,
    /// in hex. Not a digest of the content (that would mean reading the file for a 304), but
    /// a file rewritten with the same length within the same nanosecond is the only change
    /// it misses.
    pub etag: String,
    /// The modification time in whole seconds, if the file system gives one that an
    /// HTTP-date can express.
    pub last_modified: Option<SystemTime>,
}

isolated!(struct Validators { etag, last_modified });

impl Validators {
    /// The validators of a file of `len` bytes last modified at `modified`.
    pub fn new(len: u64, modified: Option<SystemTime>) -> Validators {
        let since_epoch = modified.and_then(|t| t.duration_since(UNIX_EPOCH).ok());
        let etag = match since_epoch {
            Some(d) => format!("\"{:x}.{:x}-{len:x}\"", d.as_secs(), d.subsec_nanos()),
            // No usable time (or one before 1970): the length alone still tells most changes.
            None => format!("\"{len:x}\""),
        };
        Validators {
            etag,
            last_modified: modified.and_then(date::whole_second),
        }
    }

    /// The `Last-Modified` value, if there is one.
    pub fn last_modified_header(&self) -> Option<String> {
        self.last_modified.and_then(date::format)
    }

    /// The entity tag without its quotes.
    fn opaque(&self) -> &str {
        self.etag.trim_matches('"')
    }
}

/// The request headers that decide what part of a file is sent, copied out of the request
/// so that the process reading the file can decide without it. Built by [`Conditions::of`]
/// (more conditions may be added, hence `#[non_exhaustive]`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Conditions {
    /// Every `If-None-Match` value, joined as one list.
    pub if_none_match: Option<String>,
    /// The first `If-Modified-Since` value.
    pub if_modified_since: Option<String>,
    /// The `Range` value, kept only for GET (RFC 9110 §14.2: range handling is defined for
    /// GET alone, so a HEAD is answered in full) and only when there is exactly one.
    pub range: Option<String>,
    /// The `If-Range` value.
    pub if_range: Option<String>,
}

isolated!(struct Conditions { if_none_match, if_modified_since, range, if_range });

/// What to send for a file. Conditions not handled yet (`If-Match`, `If-Unmodified-Since`)
/// would add answers such as 412, hence `#[non_exhaustive]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Selection {
    /// 304: the client's copy is current.
    NotModified,
    /// 200 with the whole file.
    Full,
    /// 206 with this range.
    Partial(ByteRange),
    /// 416: the range asked for starts past the end.
    Unsatisfiable,
}

isolated!(
    enum Selection {
        NotModified,
        Full,
        Partial(range),
        Unsatisfiable,
    }
);

impl Conditions {
    /// The conditions `request` carries. Values that are not UTF-8 are read lossily: they
    /// then match none of our (ASCII) validators, which is the truth.
    pub fn of(request: &Request) -> Conditions {
        let text = |v: &[u8]| String::from_utf8_lossy(v).into_owned();
        let joined = |name| {
            let values: Vec<String> = request.header_values(name).map(text).collect();
            (!values.is_empty()).then(|| values.join(", "))
        };
        let mut ranges = request.header_values("range");
        let range = match (ranges.next(), ranges.next()) {
            (Some(range), None) if request.method == Method::Get => Some(text(range)),
            _ => None,
        };
        Conditions {
            if_none_match: joined("if-none-match"),
            if_modified_since: request.header("if-modified-since").map(text),
            range,
            if_range: request.header("if-range").map(text),
        }
    }

    /// What to send from a file of `len` bytes with `validators`, in RFC 9110 §13.2.2's
    /// order: `If-None-Match`, else `If-Modified-Since`; then `Range` if `If-Range` (when
    /// present) still names this version.
    pub fn select(&self, validators: &Validators, len: u64) -> Selection {
        if let Some(list) = &self.if_none_match {
            if none_match_fails(list, validators) {
                return Selection::NotModified;
            }
        } else if let (Some(since), Some(modified)) = (
            self.if_modified_since.as_deref().and_then(date::parse),
            validators.last_modified,
        ) {
            if modified <= since {
                return Selection::NotModified;
            }
        }
        let Some(spec) = self.range.as_deref().and_then(range::parse) else {
            return Selection::Full;
        };
        if let Some(if_range) = &self.if_range {
            if !if_range_holds(if_range, validators) {
                return Selection::Full;
            }
        }
        match spec.resolve(len) {
            Some(range) => Selection::Partial(range),
            None => Selection::Unsatisfiable,
        }
    }
}

/// One entity tag of a list: whether it is weak, and its opaque part (without quotes).
#[derive(Debug, PartialEq, Eq)]
struct EntityTag<'a> {
    weak: bool,
    opaque: &'a str,
}

/// The entity tags of a comma-separated list, up to the first malformed one (what follows
/// it cannot be split reliably, so it is not guessed at).
fn entity_tags(list: &str) -> Vec<EntityTag<'_>> {
    let mut tags = Vec::new();
    let mut rest = list;
    loop {
        rest = rest.trim_start_matches([' ', '\t', ',']);
        if rest.is_empty() {
            return tags;
        }
        let (weak, quoted) = match rest.strip_prefix("W/") {
            Some(quoted) => (true, quoted),
            None => (false, rest),
        };
        let Some((opaque, after)) = quoted
            .strip_prefix('"')
            .and_then(|body| body.split_once('"'))
        else {
            return tags;
        };
        tags.push(EntityTag { weak, opaque });
        rest = after;
    }
}

/// Whether `If-None-Match` fails, i.e. the client already has this version: `*`, or a tag
/// equal to ours under the weak comparison (RFC 9110 §13.1.2 and §8.8.3.2: `W/` ignored).
fn none_match_fails(list: &str, validators: &Validators) -> bool {
    list.trim() == "*"
        || entity_tags(list)
            .iter()
            .any(|tag| tag.opaque == validators.opaque())
}

/// Whether `If-Range` names the current version (RFC 9110 §13.1.5): an entity tag under the
/// strong comparison (a weak tag never matches), or a date equal to `Last-Modified`.
fn if_range_holds(value: &str, validators: &Validators) -> bool {
    let value = value.trim();
    if value.starts_with('"') || value.starts_with("W/") {
        return match entity_tags(value).as_slice() {
            [tag] => !tag.weak && tag.opaque == validators.opaque(),
            _ => false,
        };
    }
    match (date::parse(value), validators.last_modified) {
        (Some(date), Some(modified)) => date == modified,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const LEN: u64 = 100;

    fn modified() -> SystemTime {
        UNIX_EPOCH + Duration::new(784_111_777, 5)
    }

    fn validators() -> Validators {
        Validators::new(LEN, Some(modified()))
    }

    const ETAG: &str = "\"2ebc98a1.5-64\"";
    const LAST_MODIFIED: &str = "Sun, 06 Nov 1994 08:49:37 GMT";

    fn select(conditions: Conditions) -> Selection {
        conditions.select(&validators(), LEN)
    }

    fn none_match(list: &str) -> Conditions {
        Conditions {
            if_none_match: Some(list.into()),
            ..Conditions::default()
        }
    }

    fn ranged(range: &str, if_range: Option<&str>) -> Conditions {
        Conditions {
            range: Some(range.into()),
            if_range: if_range.map(Into::into),
            ..Conditions::default()
        }
    }

    #[test]
    fn validators_of_a_file() {
        let v = validators();
        assert_eq!(v.etag, ETAG);
        assert_eq!(v.last_modified_header().as_deref(), Some(LAST_MODIFIED));
        let without_time = Validators::new(LEN, None);
        assert_eq!(without_time.etag, "\"64\"");
        assert_eq!(without_time.last_modified_header(), None);
        let before_1970 = Validators::new(LEN, UNIX_EPOCH.checked_sub(Duration::from_secs(9)));
        assert_eq!(before_1970.etag, "\"64\"");
        assert_eq!(before_1970.last_modified, None);
        // A change of length or of time, even by a nanosecond, changes the tag.
        assert_ne!(Validators::new(LEN + 1, Some(modified())).etag, ETAG);
        let later = modified() + Duration::from_nanos(1);
        assert_ne!(Validators::new(LEN, Some(later)).etag, ETAG);
    }

    #[test]
    fn if_none_match() {
        for list in [
            ETAG,
            "*",
            " * ",
            "W/\"2ebc98a1.5-64\"",
            "\"other\", \"2ebc98a1.5-64\"",
            "\"a\",,W/\"2ebc98a1.5-64\" , \"b\"",
        ] {
            assert_eq!(select(none_match(list)), Selection::NotModified, "{list}");
        }
        for list in [
            "\"other\"",
            "",
            "2ebc98a1.5-64",
            "\"2ebc98a1.5-64",
            "garbage, \"2ebc98a1.5-64\"",
            "\"2EBC98A1.5-64\"",
        ] {
            assert_eq!(select(none_match(list)), Selection::Full, "{list}");
        }
    }

    #[test]
    fn if_modified_since_only_without_if_none_match() {
        let since = |date: &str| Conditions {
            if_modified_since: Some(date.into()),
            ..Conditions::default()
        };
        assert_eq!(select(since(LAST_MODIFIED)), Selection::NotModified);
        assert_eq!(
            select(since("Sun, 06 Nov 1994 08:49:38 GMT")),
            Selection::NotModified
        );
        assert_eq!(
            select(since("Sun, 06 Nov 1994 08:49:36 GMT")),
            Selection::Full
        );
        assert_eq!(select(since("not a date")), Selection::Full);
        let both = Conditions {
            if_modified_since: Some(LAST_MODIFIED.into()),
            ..none_match("\"other\"")
        };
        assert_eq!(select(both), Selection::Full);
        // No Last-Modified: nothing to compare with.
        let no_time = Validators::new(LEN, None);
        assert_eq!(since(LAST_MODIFIED).select(&no_time, LEN), Selection::Full);
    }

    #[test]
    fn ranges_and_if_range() {
        let part = |first, last| Selection::Partial(ByteRange { first, last });
        assert_eq!(select(ranged("bytes=0-9", None)), part(0, 9));
        assert_eq!(select(ranged("bytes=-10", None)), part(90, 99));
        assert_eq!(select(ranged("bytes=100-", None)), Selection::Unsatisfiable);
        assert_eq!(select(ranged("bytes=0-1,5-6", None)), Selection::Full);
        assert_eq!(select(ranged("bytes=9-0", None)), Selection::Full);
        assert_eq!(select(ranged("bytes=0-9", Some(ETAG))), part(0, 9));
        assert_eq!(select(ranged("bytes=0-9", Some(LAST_MODIFIED))), part(0, 9));
        for stale in [
            "\"other\"",
            "W/\"2ebc98a1.5-64\"",
            "Sun, 06 Nov 1994 08:49:38 GMT",
            "garbage",
            "\"2ebc98a1.5-64\", \"x\"",
        ] {
            assert_eq!(
                select(ranged("bytes=0-9", Some(stale))),
                Selection::Full,
                "{stale}"
            );
        }
        // A current copy wins over a range.
        let both = Conditions {
            range: Some("bytes=0-9".into()),
            ..none_match(ETAG)
        };
        assert_eq!(select(both), Selection::NotModified);
    }

    #[test]
    fn conditions_from_a_request() {
        let request = |method: Method, headers: &[(&str, &str)]| Request {
            method,
            path: "/files/a".into(),
            query: None,
            version: 1,
            headers: headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.as_bytes().to_vec()))
                .collect(),
            body: Vec::new(),
            keep_alive: true,
        };
        let headers = [
            ("If-None-Match", "\"a\""),
            ("if-none-match", "\"b\""),
            ("If-Modified-Since", LAST_MODIFIED),
            ("Range", "bytes=0-1"),
            ("If-Range", ETAG),
        ];
        let get = Conditions::of(&request(Method::Get, &headers));
        assert_eq!(get.if_none_match.as_deref(), Some("\"a\", \"b\""));
        assert_eq!(get.if_modified_since.as_deref(), Some(LAST_MODIFIED));
        assert_eq!(get.range.as_deref(), Some("bytes=0-1"));
        assert_eq!(get.if_range.as_deref(), Some(ETAG));
        assert_eq!(Conditions::of(&request(Method::Head, &headers)).range, None);
        let two_ranges = [("Range", "bytes=0-1"), ("Range", "bytes=2-3")];
        assert_eq!(
            Conditions::of(&request(Method::Get, &two_ranges)).range,
            None
        );
        assert_eq!(
            Conditions::of(&request(Method::Get, &[])),
            Conditions::default()
        );
    }
}
