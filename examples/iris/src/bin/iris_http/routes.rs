//! The `Dispatcher`'s decision: which handler a request goes to, from its method and path.
//!
//! Routing also decodes the path and refuses unsafe ones once for every handler, so the file
//! handler can join the path to its root without checking again. Each `/`-separated segment
//! is percent-decoded on its own (by the percent-encoding crate), exactly once, and checked
//! after decoding: a segment that decodes to `.` or `..`, or holds a `/` (`%2F`), a
//! backslash, NUL or another control character, or is not UTF-8, gives [`Route::BadPath`],
//! answered 400; so do empty segments and drive colons in file paths. Decoding once and
//! checking what was decoded is what keeps `%2e%2e` and `..%2f` from reaching the file
//! system as `..`.

use std::borrow::Cow;

use percent_encoding::percent_decode_str;
use whirl_http::{Method, Request};

/// Resources per page when the query names no limit.
pub const DEFAULT_LIMIT: usize = 50;
/// The largest page a client may ask for.
pub const MAX_LIMIT: usize = 500;

/// Where a request goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `POST /login`: credentials in the body.
    Login,
    /// `GET /files/<path>`: a static file, `path` relative, decoded and checked.
    File {
        /// Relative path under the file root, without `.`/`..`/empty segments.
        path: String,
        /// The target named a directory (it ended in `/`) and `path` is its `index.html`.
        /// When false and `path` turns out to be a directory, the answer is a redirect to
        /// the target with a `/` added, as static file servers do.
        index: bool,
    },
    /// A permanent redirect to `location` (`/files` to `/files/`).
    Redirect {
        /// The `Location` value.
        location: &'static str,
    },
    /// `GET /resources?offset=&limit=`: a page of resources.
    ListResources {
        /// First position (default 0).
        offset: usize,
        /// Page size (default [`DEFAULT_LIMIT`], at most [`MAX_LIMIT`]).
        limit: usize,
    },
    /// `GET /resources/<id>`: one resource.
    ShowResource {
        /// Its id.
        id: u32,
    },
    /// `GET /status`: runtime statistics, for admins only (checked by the server, which
    /// knows the session).
    Status,
    /// `GET /status.json`: the same statistics as JSON (`whirl::control::RuntimeStats`
    /// serialized), for admins only.
    StatusJson,
    /// `GET /status/sessions`: the session table's size, for admins only.
    StatusSessions,
    /// A path that tries to leave its directory or carries forbidden bytes (400).
    BadPath,
    /// No such page (404).
    NotFound,
    /// A known path with a method it does not serve (405 with `Allow`).
    MethodNotAllowed {
        /// The value of the `Allow` header.
        allow: &'static str,
    },
}

impl Route {
    /// The status code for the routes that are answered without a handler.
    pub fn error_status(&self) -> Option<u16> {
        match self {
            Route::BadPath => Some(400),
            Route::NotFound => Some(404),
            Route::MethodNotAllowed { .. } => Some(405),
            _ => None,
        }
    }
}

/// Whether `request` starts a session for a client that has none: its decoded path is one
/// of `prefixes` or under it (whole segments: `/resources` covers `/resources/7`, not
/// `/resourcesX`), and it is not a static file (a session never starts on one, whatever
/// the prefixes say). A login starts its own (named) session and needs none of these.
pub fn starts_session(request: &Request, prefixes: &[String]) -> bool {
    if prefixes.is_empty() {
        return false;
    }
    let Some(path) = origin_path(&request.path).and_then(decode_path) else {
        return false;
    };
    let under_a_prefix = prefixes.iter().any(|prefix| {
        let prefix = prefix.trim_end_matches('/');
        path.strip_prefix(prefix)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    });
    // Routed only when a prefix matched: most requests (static files under the default
    // prefix) are decided without building a route.
    under_a_prefix && !matches!(route(request), Route::File { .. } | Route::Redirect { .. })
}

/// Routes `request`. `HEAD` goes wherever `GET` does.
pub fn route(request: &Request) -> Route {
    let Some(target) = origin_path(&request.path) else {
        return Route::NotFound;
    };
    let Some(path) = decode_path(target) else {
        return Route::BadPath;
    };
    let path = path.as_ref();
    let readable = matches!(request.method, Method::Get | Method::Head);
    let read_only = |route: Route| {
        if readable {
            route
        } else {
            Route::MethodNotAllowed { allow: "GET, HEAD" }
        }
    };
    match path {
        "/login" if request.method == Method::Post => Route::Login,
        "/login" => Route::MethodNotAllowed { allow: "POST" },
        "/status" => read_only(Route::Status),
        "/status.json" => read_only(Route::StatusJson),
        "/status/sessions" => read_only(Route::StatusSessions),
        "/resources" => {
            let (offset, limit) = page(request.query.as_deref());
            read_only(Route::ListResources { offset, limit })
        }
        "/files" => read_only(Route::Redirect {
            location: "/files/",
        }),
        _ => {
            if let Some(rest) = path.strip_prefix("/files/") {
                match file_path(rest) {
                    Some((path, index)) => read_only(Route::File { path, index }),
                    None => Route::BadPath,
                }
            } else if let Some(id) = path.strip_prefix("/resources/") {
                match parse_digits(id).and_then(|id| u32::try_from(id).ok()) {
                    Some(id) => read_only(Route::ShowResource { id }),
                    None => Route::NotFound,
                }
            } else {
                Route::NotFound
            }
        }
    }
}

/// The path of an origin-form target (`/a/b`) or of an absolute-form one
/// (`http://host/a/b`, which RFC 9112 says servers must accept); `None` for `*` and
/// other forms.
fn origin_path(target: &str) -> Option<&str> {
    if target.starts_with('/') {
        return Some(target);
    }
    let (scheme, rest) = target.split_once("://")?;
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return None;
    }
    Some(rest.find('/').map_or("/", |i| &rest[i..]))
}

/// The path with each segment percent-decoded, or `None` if a `%` is not followed by two hex
/// digits (RFC 3986 §2.1; the crate would keep it as it is) or a decoded segment is `.` or
/// `..`, holds a `/`, a backslash or a control character (NUL included), or is not UTF-8.
/// Borrowed when there was nothing to decode, the common case.
fn decode_path(path: &str) -> Option<Cow<'_, str>> {
    let safe = |segment: &str| {
        segment != "."
            && segment != ".."
            && !segment.contains(|c: char| c == '/' || c == '\\' || c.is_control())
    };
    if !path.contains('%') {
        return path.split('/').all(safe).then_some(Cow::Borrowed(path));
    }
    let escapes_are_whole = path.split('%').skip(1).all(|after| {
        after
            .as_bytes()
            .get(..2)
            .is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit))
    });
    if !escapes_are_whole {
        return None;
    }
    let mut decoded = String::with_capacity(path.len());
    for (i, segment) in path.split('/').enumerate() {
        let segment = percent_decode_str(segment).decode_utf8().ok()?;
        if !safe(&segment) {
            return None;
        }
        if i > 0 {
            decoded.push('/');
        }
        decoded.push_str(&segment);
    }
    Some(Cow::Owned(decoded))
}

/// The file to open for the (decoded) path after `/files/`, and whether it is a directory's
/// index: `a/b` → `a/b`, `a/` → `a/index.html`, `` → `index.html`. `None` unless every
/// segment is non-empty (so the path is not absolute) and none holds a colon (a Windows
/// drive); `decode_path` already refused the rest.
fn file_path(rest: &str) -> Option<(String, bool)> {
    if rest.is_empty() {
        return Some(("index.html".into(), true));
    }
    let (path, index) = match rest.strip_suffix('/') {
        Some(dir) => (dir, true),
        None => (rest, false),
    };
    if !path.split('/').all(|s| !s.is_empty() && !s.contains(':')) {
        return None;
    }
    Some(match index {
        true => (format!("{path}/index.html"), true),
        false => (path.to_string(), false),
    })
}

/// `offset` and `limit` from the query: missing or unparsable values take the defaults,
/// and the limit is capped, so any query gives a bounded page.
fn page(query: Option<&str>) -> (usize, usize) {
    let mut offset = 0;
    let mut limit = DEFAULT_LIMIT;
    for pair in query.unwrap_or("").split('&') {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let value = parse_digits(value).and_then(|v| usize::try_from(v).ok());
        match (key, value) {
            ("offset", Some(v)) => offset = v,
            ("limit", Some(v)) => limit = v.min(MAX_LIMIT),
            _ => {}
        }
    }
    (offset, limit)
}

/// A decimal number of ASCII digits only (`u64::from_str` would also take a `+`).
fn parse_digits(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(method: Method, target: &str) -> Request {
        let (path, query) = match target.split_once('?') {
            Some((p, q)) => (p.to_string(), Some(q.to_string())),
            None => (target.to_string(), None),
        };
        Request {
            method,
            path,
            query,
            version: 1,
            headers: Vec::new(),
            body: Vec::new(),
            keep_alive: true,
        }
    }

    fn get(target: &str) -> Route {
        route(&request(Method::Get, target))
    }

    #[test]
    fn login_is_post_only() {
        assert_eq!(route(&request(Method::Post, "/login")), Route::Login);
        assert_eq!(get("/login"), Route::MethodNotAllowed { allow: "POST" });
    }

    fn file(path: &str, index: bool) -> Route {
        Route::File {
            path: path.into(),
            index,
        }
    }

    #[test]
    fn files() {
        assert_eq!(
            get("/files/docs/index.html"),
            file("docs/index.html", false)
        );
        assert_eq!(
            route(&request(Method::Head, "/files/a.png")),
            file("a.png", false)
        );
        assert_eq!(
            route(&request(Method::Post, "/files/a.png")),
            Route::MethodNotAllowed { allow: "GET, HEAD" }
        );
    }

    #[test]
    fn directories_get_their_index_or_a_redirect() {
        assert_eq!(get("/files/"), file("index.html", true));
        assert_eq!(get("/files/a/"), file("a/index.html", true));
        assert_eq!(get("/files/a/b/"), file("a/b/index.html", true));
        // Whether `a` is a directory is for the file handler to find out.
        assert_eq!(get("/files/a"), file("a", false));
        assert_eq!(
            get("/files"),
            Route::Redirect {
                location: "/files/"
            }
        );
        assert_eq!(
            route(&request(Method::Post, "/files")),
            Route::MethodNotAllowed { allow: "GET, HEAD" }
        );
    }

    #[test]
    fn paths_are_percent_decoded_once() {
        assert_eq!(get("/files/ind%65x.html"), file("index.html", false));
        assert_eq!(get("/files/a%20b/c%25d"), file("a b/c%d", false));
        assert_eq!(get("/files/%25%32%65"), file("%2e", false));
        assert_eq!(get("/files/caf%C3%A9/"), file("café/index.html", true));
        assert_eq!(get("/st%61tus"), Route::Status);
        for malformed in ["/files/%", "/files/a%zz", "/files/a%2", "/files/%%41"] {
            assert_eq!(get(malformed), Route::BadPath, "{malformed}");
        }
    }

    #[test]
    fn traversal_attempts_are_bad_paths() {
        for target in [
            "/files/../etc/passwd",
            "/files/a/../../etc/passwd",
            "/files/..",
            "/files/./a",
            "/files//etc/passwd",
            "/files/a//b",
            "/files/a//",
            "/files//",
            "/files/..\\..\\windows",
            "/files/a\\b",
            "/files/%2e%2e/etc/passwd",
            "/files/%2E%2E/etc/passwd",
            "/files/.%2e/etc/passwd",
            "/files/%2e/a",
            "/files/..%2fetc",
            "/files/a%2Fb",
            "/files/a%5cb",
            "/files/a%00b",
            "/files/a%0d%0aSet-Cookie:x",
            "/files/%ff",
            "/files/%c3%28",
            "/files/%2e%2e%2f%2e%2e%2fetc%2fpasswd",
            "/files/C:/boot.ini",
            "/files/C%3a/boot.ini",
            "/files/a\0b",
            "/%2e%2e/files/a",
            "/resources/%2e%2e/status",
            "/resources/../status",
            "/../files/a",
            "/./status",
            "/status\0",
        ] {
            assert_eq!(get(target), Route::BadPath, "{target:?}");
        }
        assert_eq!(get("/files/..hidden/a..b"), file("..hidden/a..b", false));
    }

    #[test]
    fn resource_listing_pages() {
        assert_eq!(
            get("/resources"),
            Route::ListResources {
                offset: 0,
                limit: 50
            }
        );
        assert_eq!(
            get("/resources?offset=20&limit=10"),
            Route::ListResources {
                offset: 20,
                limit: 10
            }
        );
        assert_eq!(
            get("/resources?limit=100000&offset=x"),
            Route::ListResources {
                offset: 0,
                limit: 500
            }
        );
        assert_eq!(
            get("/resources?offset=-1&limit=+5&flag&offset=99999999999999999999999"),
            Route::ListResources {
                offset: 0,
                limit: 50
            }
        );
        assert_eq!(
            route(&request(Method::Post, "/resources")),
            Route::MethodNotAllowed { allow: "GET, HEAD" }
        );
    }

    #[test]
    fn show_resource_ids() {
        assert_eq!(get("/resources/42"), Route::ShowResource { id: 42 });
        assert_eq!(get("/resources/007"), Route::ShowResource { id: 7 });
        for bad in ["abc", "-1", "+1", "", "1.5", "4294967296", "1/2"] {
            assert_eq!(
                get(&format!("/resources/{bad}")),
                Route::NotFound,
                "{bad:?}"
            );
        }
    }

    #[test]
    fn status_and_unknown_paths() {
        assert_eq!(get("/status"), Route::Status);
        assert_eq!(get("/status.json"), Route::StatusJson);
        assert_eq!(get("/status/sessions"), Route::StatusSessions);
        assert_eq!(
            route(&request(Method::Other("DELETE".into()), "/status")),
            Route::MethodNotAllowed { allow: "GET, HEAD" }
        );
        assert_eq!(get("/"), Route::NotFound);
        assert_eq!(get("/nope"), Route::NotFound);
        assert_eq!(get("*"), Route::NotFound);
        assert_eq!(route(&request(Method::Post, "/nope")), Route::NotFound);
    }

    #[test]
    fn absolute_form_targets() {
        assert_eq!(get("http://example.org/status"), Route::Status);
        assert_eq!(get("HTTPS://example.org"), Route::NotFound);
        assert_eq!(get("ftp://example.org/status"), Route::NotFound);
    }

    #[test]
    fn sessions_start_under_their_prefixes_and_never_on_files() {
        let prefixes = ["/resources".to_string(), "/app/".to_string()];
        let starts = |target: &str| starts_session(&request(Method::Get, target), &prefixes);
        assert!(starts("/resources"));
        assert!(starts("/resources/7"));
        assert!(starts("/resources?limit=3"));
        assert!(starts("/r%65sources/7"), "decoded before it is compared");
        assert!(starts("/app/x"));
        assert!(starts("http://example.org/resources/1"));
        assert!(!starts("/resourcesX"));
        assert!(!starts("/status"));
        assert!(!starts("/login"));
        assert!(!starts("/files/index.html"));
        assert!(!starts("/%2e%2e/resources"));
        // A file never starts one, even under a prefix that covers it.
        let everything = ["/".to_string()];
        let get = request(Method::Get, "/files/index.html");
        assert!(!starts_session(&get, &everything));
        assert!(!starts_session(
            &request(Method::Get, "/files"),
            &everything
        ));
        assert!(starts_session(
            &request(Method::Get, "/status"),
            &everything
        ));
        assert!(!starts_session(&request(Method::Get, "/resources/1"), &[]));
    }

    #[test]
    fn error_statuses() {
        assert_eq!(Route::Redirect { location: "/" }.error_status(), None);
        assert_eq!(Route::BadPath.error_status(), Some(400));
        assert_eq!(Route::NotFound.error_status(), Some(404));
        assert_eq!(
            Route::MethodNotAllowed { allow: "POST" }.error_status(),
            Some(405)
        );
        assert_eq!(Route::Status.error_status(), None);
    }
}
