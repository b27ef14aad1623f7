//! Conditional and range requests for files (RFC 9110 §13, §14): a file's validators
//! (`ETag`, `Last-Modified`) and what a GET or HEAD gets given its `If-Match`,
//! `If-Unmodified-Since`, `If-None-Match`, `If-Modified-Since`, `Range` and `If-Range`: the
//! whole file, one byte range, 412, 304 or 416.
//!
//! The preconditions are evaluated in the order of RFC 9110 §13.2.2, each step reached only
//! when the one before passed or was absent:
//!
//! 1. `If-Match`, if present: false → 412;
//! 2. else `If-Unmodified-Since`, if present: false → 412;
//! 3. `If-None-Match`, if present: false → 304 (GET, HEAD) or 412 (other methods);
//! 4. else `If-Modified-Since`, for GET and HEAD: false → 304;
//! 5. `Range` (GET alone), honoured only if `If-Range`, when present, names this version.
//!
//! Pure decisions on header values and file metadata; reading the file is the caller's job,
//! so that a 304 or a range never reads more than it sends.

use std::fmt::Write as _;
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
        // At most 16 + 8 + 16 hex digits and 4 marks: one allocation, where `format!` grows
        // its string two or three times.
        let mut etag = String::with_capacity(44);
        // Writing to a String cannot fail.
        let _ = match since_epoch {
            Some(d) => write!(etag, "\"{:x}.{:x}-{len:x}\"", d.as_secs(), d.subsec_nanos()),
            // No usable time (or one before 1970): the length alone still tells most changes.
            None => write!(etag, "\"{len:x}\""),
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
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Conditions {
    /// Every `If-Match` value, joined as one list.
    pub if_match: Option<String>,
    /// The first `If-Unmodified-Since` value.
    pub if_unmodified_since: Option<String>,
    /// Every `If-None-Match` value, joined as one list.
    pub if_none_match: Option<String>,
    /// The first `If-Modified-Since` value, kept only for GET and HEAD (RFC 9110 §13.1.3:
    /// other methods ignore it).
    pub if_modified_since: Option<String>,
    /// The `Range` value, kept only for GET (RFC 9110 §14.2: range handling is defined for
    /// GET alone, so a HEAD is answered in full) and only when there is exactly one.
    pub range: Option<String>,
    /// The `If-Range` value.
    pub if_range: Option<String>,
    /// The method is GET or HEAD: a failed `If-None-Match` is then a 304, else a 412.
    pub read_only: bool,
}

isolated!(struct Conditions { if_match, if_unmodified_since, if_none_match, if_modified_since, range, if_range, read_only });

/// What to send for a file. More answers may be added, hence `#[non_exhaustive]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Selection {
    /// 412: `If-Match` or `If-Unmodified-Since` (or, for a method other than GET and HEAD,
    /// `If-None-Match`) is false.
    PreconditionFailed,
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
        PreconditionFailed,
        NotModified,
        Full,
        Partial(range),
        Unsatisfiable,
    }
);

impl Default for Conditions {
    /// A GET without conditions: the whole file.
    fn default() -> Self {
        Conditions {
            if_match: None,
            if_unmodified_since: None,
            if_none_match: None,
            if_modified_since: None,
            range: None,
            if_range: None,
            read_only: true,
        }
    }
}

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
        let read_only = matches!(request.method, Method::Get | Method::Head);
        Conditions {
            if_match: joined("if-match"),
            if_unmodified_since: request.header("if-unmodified-since").map(text),
            if_none_match: joined("if-none-match"),
            if_modified_since: request
                .header("if-modified-since")
                .filter(|_| read_only)
                .map(text),
            range,
            if_range: request.header("if-range").map(text),
            read_only,
        }
    }

    /// What to send from a file of `len` bytes with `validators`, in RFC 9110 §13.2.2's
    /// order (see the module documentation).
    pub fn select(&self, validators: &Validators, len: u64) -> Selection {
        if let Some(list) = &self.if_match {
            if !match_holds(list, validators) {
                return Selection::PreconditionFailed;
            }
        } else if let (Some(since), Some(modified)) = (
            self.if_unmodified_since.as_deref().and_then(date::parse),
            validators.last_modified,
        ) {
            // RFC 9110 §13.1.4: ignored when the date is not a valid HTTP-date or the
            // resource has no modification date.
            if modified > since {
                return Selection::PreconditionFailed;
            }
        }
        if let Some(list) = &self.if_none_match {
            if none_match_fails(list, validators) {
                return match self.read_only {
                    true => Selection::NotModified,
                    false => Selection::PreconditionFailed,
                };
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

/// Whether `If-Match` holds (RFC 9110 §13.1.1): `*` (the file exists), or a tag equal to
/// ours under the strong comparison (a weak tag never matches).
fn match_holds(list: &str, validators: &Validators) -> bool {
    list.trim() == "*"
        || entity_tags(list)
            .iter()
            .any(|tag| !tag.weak && tag.opaque == validators.opaque())
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

    fn matching(list: &str) -> Conditions {
        Conditions {
            if_match: Some(list.into()),
            ..Conditions::default()
        }
    }

    fn unmodified_since(date: &str) -> Conditions {
        Conditions {
            if_unmodified_since: Some(date.into()),
            ..Conditions::default()
        }
    }

    #[test]
    fn if_match_uses_the_strong_comparison() {
        for list in [ETAG, "*", " * ", "\"a\", \"2ebc98a1.5-64\""] {
            assert_eq!(select(matching(list)), Selection::Full, "{list}");
        }
        for list in [
            "\"other\"",
            "W/\"2ebc98a1.5-64\"",
            "",
            "garbage, \"2ebc98a1.5-64\"",
        ] {
            assert_eq!(
                select(matching(list)),
                Selection::PreconditionFailed,
                "{list}"
            );
        }
    }

    #[test]
    fn if_unmodified_since() {
        assert_eq!(select(unmodified_since(LAST_MODIFIED)), Selection::Full);
        assert_eq!(
            select(unmodified_since("Sun, 06 Nov 1994 08:49:38 GMT")),
            Selection::Full
        );
        assert_eq!(
            select(unmodified_since("Sun, 06 Nov 1994 08:49:36 GMT")),
            Selection::PreconditionFailed
        );
        // Not a date, or nothing to compare with: ignored.
        assert_eq!(select(unmodified_since("yesterday")), Selection::Full);
        let no_time = Validators::new(LEN, None);
        assert_eq!(
            unmodified_since("Sun, 06 Nov 1994 08:49:36 GMT").select(&no_time, LEN),
            Selection::Full
        );
    }

    /// RFC 9110 §13.2.2, step by step: each precondition is looked at only when the ones
    /// before it passed or were absent.
    #[test]
    fn preconditions_are_evaluated_in_rfc_9110_order() {
        let stale = "Sun, 06 Nov 1994 08:49:36 GMT";
        // 1 before 2: If-Match holds, so a failing If-Unmodified-Since is not evaluated.
        let both = Conditions {
            if_unmodified_since: Some(stale.into()),
            ..matching(ETAG)
        };
        assert_eq!(select(both), Selection::Full);
        // 1 before 3: If-Match fails, so a failing If-None-Match gives 412, not 304.
        let both = Conditions {
            if_none_match: Some(ETAG.into()),
            ..matching("\"other\"")
        };
        assert_eq!(select(both), Selection::PreconditionFailed);
        // 2 before 3.
        let both = Conditions {
            if_none_match: Some(ETAG.into()),
            ..unmodified_since(stale)
        };
        assert_eq!(select(both), Selection::PreconditionFailed);
        // 1 passes, 3 fails: 304.
        let both = Conditions {
            if_none_match: Some(ETAG.into()),
            ..matching(ETAG)
        };
        assert_eq!(select(both), Selection::NotModified);
        // 3 present: If-Modified-Since (4) is not evaluated.
        let both = Conditions {
            if_none_match: Some("\"other\"".into()),
            if_modified_since: Some(LAST_MODIFIED.into()),
            ..matching(ETAG)
        };
        assert_eq!(select(both), Selection::Full);
        // 3 fails for a method other than GET and HEAD: 412.
        let write = Conditions {
            if_none_match: Some("*".into()),
            read_only: false,
            ..Conditions::default()
        };
        assert_eq!(select(write), Selection::PreconditionFailed);
        // 412 before a range (5).
        let ranged_412 = Conditions {
            range: Some("bytes=0-9".into()),
            ..matching("\"other\"")
        };
        assert_eq!(select(ranged_412), Selection::PreconditionFailed);
        // All pass: the range is served.
        let all = Conditions {
            if_unmodified_since: Some(stale.into()),
            if_none_match: Some("\"other\"".into()),
            range: Some("bytes=0-9".into()),
            if_range: Some(ETAG.into()),
            ..matching(ETAG)
        };
        assert_eq!(
            select(all),
            Selection::Partial(ByteRange { first: 0, last: 9 })
        );
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
            ("If-Match", "\"m\""),
            ("if-match", "\"n\""),
            ("If-Unmodified-Since", LAST_MODIFIED),
            ("If-None-Match", "\"a\""),
            ("if-none-match", "\"b\""),
            ("If-Modified-Since", LAST_MODIFIED),
            ("Range", "bytes=0-1"),
            ("If-Range", ETAG),
        ];
        let get = Conditions::of(&request(Method::Get, &headers));
        assert_eq!(get.if_match.as_deref(), Some("\"m\", \"n\""));
        assert_eq!(get.if_unmodified_since.as_deref(), Some(LAST_MODIFIED));
        assert!(get.read_only);
        assert_eq!(get.if_none_match.as_deref(), Some("\"a\", \"b\""));
        assert_eq!(get.if_modified_since.as_deref(), Some(LAST_MODIFIED));
        assert_eq!(get.range.as_deref(), Some("bytes=0-1"));
        assert_eq!(get.if_range.as_deref(), Some(ETAG));
        assert_eq!(Conditions::of(&request(Method::Head, &headers)).range, None);
        let post = Conditions::of(&request(Method::Post, &headers));
        assert!(!post.read_only);
        assert_eq!(post.if_modified_since, None, "only GET and HEAD use it");
        assert_eq!(post.if_match.as_deref(), Some("\"m\", \"n\""));
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
