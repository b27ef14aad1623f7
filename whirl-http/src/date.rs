//! HTTP-dates (RFC 9110 §5.6.7), formatted and parsed by the httpdate crate: the `Date` every
//! response carries, formatted once per second per connection, and the checked conversion of
//! file times, which the crate would panic on outside the years 1970 to 9999.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The first second after the year 9999, which the IMF-fixdate format cannot express.
const YEAR_10000: u64 = 253_402_300_800;

/// `time` rounded down to the whole second, if an HTTP-date can express it (1970 to 9999).
/// HTTP-dates have no fractions, so comparisons with a client's date are made on this.
pub(crate) fn whole_second(time: SystemTime) -> Option<SystemTime> {
    let secs = time.duration_since(UNIX_EPOCH).ok()?.as_secs();
    (secs < YEAR_10000).then(|| UNIX_EPOCH + Duration::from_secs(secs))
}

/// `time` as an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), if it can be expressed.
pub(crate) fn format(time: SystemTime) -> Option<String> {
    whole_second(time).map(httpdate::fmt_http_date)
}

/// A date a client sent (IMF-fixdate, or the obsolete RFC 850 and asctime forms that
/// RFC 9110 says recipients must accept); `None` if it is not one.
pub(crate) fn parse(value: &str) -> Option<SystemTime> {
    httpdate::parse_http_date(value.trim()).ok()
}

/// The value of the `Date` header, formatted at most once per second: a connection answering
/// thousands of requests a second would otherwise format the same string for each.
#[derive(Debug, Default)]
pub struct DateCache {
    /// Seconds since the epoch of `formatted`.
    second: u64,
    formatted: String,
}

isolated!(struct DateCache { second, formatted });

impl DateCache {
    /// The current date.
    pub fn now(&mut self) -> &str {
        self.at(SystemTime::now())
    }

    /// The date at `now` (a clock the format cannot express gives the epoch rather than no
    /// `Date`: the header is required, and such a clock is broken anyway).
    fn at(&mut self, now: SystemTime) -> &str {
        let second = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        if self.formatted.is_empty() || second != self.second {
            self.second = second;
            self.formatted = format(now).unwrap_or_else(|| httpdate::fmt_http_date(UNIX_EPOCH));
        }
        &self.formatted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_parses_imf_fixdate() {
        let t = UNIX_EPOCH + Duration::from_secs(784_111_777);
        assert_eq!(format(t).as_deref(), Some("Sun, 06 Nov 1994 08:49:37 GMT"));
        assert_eq!(parse(" Sun, 06 Nov 1994 08:49:37 GMT "), Some(t));
        assert_eq!(parse("Sunday, 06-Nov-94 08:49:37 GMT"), Some(t));
        assert_eq!(parse("Sun Nov  6 08:49:37 1994"), Some(t));
        assert_eq!(parse("yesterday"), None);
        assert_eq!(parse(""), None);
    }

    #[test]
    fn fractions_are_dropped_and_unexpressible_times_refused() {
        let t = UNIX_EPOCH + Duration::new(10, 999_999_999);
        assert_eq!(whole_second(t), Some(UNIX_EPOCH + Duration::from_secs(10)));
        let before_1970 = UNIX_EPOCH - Duration::from_secs(1);
        assert_eq!(whole_second(before_1970), None);
        assert_eq!(format(before_1970), None);
        let after_9999 = UNIX_EPOCH + Duration::from_secs(YEAR_10000);
        assert_eq!(format(after_9999), None);
        assert!(format(after_9999 - Duration::from_secs(1)).is_some());
    }

    #[test]
    fn the_cache_changes_with_the_second() {
        let mut cache = DateCache::default();
        let t = UNIX_EPOCH + Duration::from_secs(784_111_777);
        assert_eq!(cache.at(t), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(
            cache.at(t + Duration::from_millis(999)),
            "Sun, 06 Nov 1994 08:49:37 GMT"
        );
        assert_eq!(
            cache.at(t + Duration::from_secs(1)),
            "Sun, 06 Nov 1994 08:49:38 GMT"
        );
        assert_eq!(
            cache.at(UNIX_EPOCH - Duration::from_secs(5)),
            "Thu, 01 Jan 1970 00:00:00 GMT"
        );
    }
}
