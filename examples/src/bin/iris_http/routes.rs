//! The `Dispatcher`'s decision: which handler a request goes to, from its method and path.
//!
//! Routing also refuses unsafe paths once for every handler, so the file handler can join
//! the path to its root without checking again: any `..` or `.` segment, empty segment,
//! NUL, backslash, drive colon or percent sign (paths are not percent-decoded, so a `%`
//! could only smuggle an encoded `..` or `/` past a later decoder) gives [`Route::BadPath`],
//! answered 400.

use crate::http::{Method, Request};

/// Resources per page when the query names no limit.
pub const DEFAULT_LIMIT: usize = 50;
/// The largest page a client may ask for.
pub const MAX_LIMIT: usize = 500;

/// Where a request goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `POST /login`: credentials in the body.
    Login,
    /// `GET /files/<path>`: a static file, `path` relative and checked.
    File {
        /// Relative path under the file root, without `.`/`..`/empty segments.
        path: String,
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

/// Routes `request`. `HEAD` goes wherever `GET` does.
pub fn route(request: &Request) -> Route {
    let Some(path) = origin_path(&request.path) else {
        return Route::NotFound;
    };
    if !path_is_safe(path) {
        return Route::BadPath;
    }
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
        "/resources" => {
            let (offset, limit) = page(request.query.as_deref());
            read_only(Route::ListResources { offset, limit })
        }
        _ => {
            if let Some(rest) = path.strip_prefix("/files/") {
                match file_path(rest) {
                    Some(path) => read_only(Route::File { path }),
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

/// No `.`/`..` segment, NUL or backslash anywhere in the path.
fn path_is_safe(path: &str) -> bool {
    !path.contains(['\0', '\\']) && path.split('/').all(|s| s != ".." && s != ".")
}

/// The file path after `/files/` if it is a plain relative path: non-empty segments only
/// (so not absolute), none `.` or `..`, and no NUL, backslash, colon or percent sign.
fn file_path(rest: &str) -> Option<String> {
    let plain = !rest.is_empty()
        && !rest.contains(['\0', '\\', ':', '%'])
        && rest
            .split('/')
            .all(|s| !s.is_empty() && s != "." && s != "..");
    plain.then(|| rest.to_string())
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

    #[test]
    fn files() {
        assert_eq!(
            get("/files/docs/index.html"),
            Route::File {
                path: "docs/index.html".into()
            }
        );
        assert_eq!(
            route(&request(Method::Head, "/files/a.png")),
            Route::File {
                path: "a.png".into()
            }
        );
        assert_eq!(
            route(&request(Method::Post, "/files/a.png")),
            Route::MethodNotAllowed { allow: "GET, HEAD" }
        );
        assert_eq!(get("/files"), Route::NotFound);
    }

    #[test]
    fn traversal_attempts_are_bad_paths() {
        for target in [
            "/files/../etc/passwd",
            "/files/a/../../etc/passwd",
            "/files/..",
            "/files/./a",
            "/files/",
            "/files//etc/passwd",
            "/files/a//b",
            "/files/a/",
            "/files/..\\..\\windows",
            "/files/a\\b",
            "/files/%2e%2e/etc/passwd",
            "/files/..%2fetc",
            "/files/C:/boot.ini",
            "/files/a\0b",
            "/resources/../status",
            "/../files/a",
            "/./status",
            "/status\0",
        ] {
            assert_eq!(get(target), Route::BadPath, "{target:?}");
        }
        assert_eq!(
            get("/files/..hidden/a..b"),
            Route::File {
                path: "..hidden/a..b".into()
            }
        );
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
    fn error_statuses() {
        assert_eq!(Route::BadPath.error_status(), Some(400));
        assert_eq!(Route::NotFound.error_status(), Some(404));
        assert_eq!(
            Route::MethodNotAllowed { allow: "POST" }.error_status(),
            Some(405)
        );
        assert_eq!(Route::Status.error_status(), None);
    }
}
