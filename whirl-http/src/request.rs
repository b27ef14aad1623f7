//! A decoded request: its method, target, headers and body, with the lookups a router and
//! its handlers make on them (headers by name, cookies).

/// The request method. Only the methods servers commonly route on get a variant; the rest
/// are kept by name so a router can answer 405 rather than 400. More may get a variant
/// (`Other` then no longer holds them), hence `#[non_exhaustive]`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Method {
    /// `GET`.
    Get,
    /// `HEAD`: answered like `GET` without the body.
    Head,
    /// `POST`.
    Post,
    /// Any other token (`PUT`, `DELETE`, extensions...).
    Other(String),
}

isolated!(
    enum Method {
        Get,
        Head,
        Post,
        Other(name),
    }
);

impl Method {
    /// The method for a request-line token (case-sensitive, as RFC 9110 says).
    pub fn from_token(token: &str) -> Method {
        match token {
            "GET" => Method::Get,
            "HEAD" => Method::Head,
            "POST" => Method::Post,
            other => Method::Other(other.to_string()),
        }
    }
}

/// One complete HTTP/1.x request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The method.
    pub method: Method,
    /// The request target up to `?`, not percent-decoded; decoding it and checking it for
    /// traversal is the router's job.
    pub path: String,
    /// The query after `?`, if any.
    pub query: Option<String>,
    /// The minor version: 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub version: u8,
    /// Headers in arrival order with their names as sent; values are bytes because RFC 9110
    /// allows obs-text in them.
    pub headers: Vec<(String, Vec<u8>)>,
    /// The body, delimited by `Content-Length` or decoded from chunks (empty without
    /// either).
    pub body: Vec<u8>,
    /// Whether the connection stays open after the response: HTTP/1.1 unless
    /// `Connection: close`, HTTP/1.0 only with `Connection: keep-alive`.
    pub keep_alive: bool,
}

isolated!(struct Request { method, path, query, version, headers, body, keep_alive });

impl Request {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_slice())
    }

    /// Every header named `name` (case-insensitive), in arrival order.
    pub fn header_values<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.headers
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_slice())
    }

    /// The `name=value` pairs of every `Cookie` header; pairs that are not UTF-8 or have no
    /// `=` are skipped, since a cookie we cannot read is one we never set.
    pub fn cookies(&self) -> impl Iterator<Item = (&str, &str)> + '_ {
        self.header_values("cookie")
            .filter_map(|v| std::str::from_utf8(v).ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|pair| {
                let (name, value) = pair.split_once('=')?;
                let value = value.trim();
                let value = value
                    .strip_prefix('"')
                    .and_then(|v| v.strip_suffix('"'))
                    .unwrap_or(value);
                Some((name.trim(), value))
            })
    }

    #[cfg(test)]
    /// The value of the first cookie called `name`.
    pub fn cookie(&self, name: &str) -> Option<&str> {
        self.cookies().find(|(n, _)| *n == name).map(|(_, v)| v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_headers(headers: &[(&str, &[u8])]) -> Request {
        Request {
            method: Method::Get,
            path: "/".into(),
            query: None,
            version: 1,
            headers: headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_vec()))
                .collect(),
            body: Vec::new(),
            keep_alive: true,
        }
    }

    #[test]
    fn methods_from_tokens() {
        assert_eq!(Method::from_token("GET"), Method::Get);
        assert_eq!(Method::from_token("HEAD"), Method::Head);
        assert_eq!(Method::from_token("POST"), Method::Post);
        assert_eq!(Method::from_token("get"), Method::Other("get".into()));
    }

    #[test]
    fn header_lookup_ignores_case() {
        let r = with_headers(&[("Host", b"a"), ("X-A", b"1"), ("x-a", b"2")]);
        assert_eq!(r.header("host"), Some(&b"a"[..]));
        assert_eq!(r.header_values("X-a").collect::<Vec<_>>(), [b"1", b"2"]);
        assert_eq!(r.header("missing"), None);
    }

    #[test]
    fn cookies_across_headers() {
        let r = with_headers(&[
            ("Cookie", b"a=b; session=T1"),
            ("cookie", b"c=\"q\";broken; =empty"),
            ("Cookie", b"bad=\xff"),
        ]);
        let all: Vec<_> = r.cookies().collect();
        assert_eq!(
            all,
            [("a", "b"), ("session", "T1"), ("c", "q"), ("", "empty")]
        );
        assert_eq!(r.cookie("session"), Some("T1"));
        assert_eq!(r.cookie("bad"), None);
        assert_eq!(r.cookie("missing"), None);
    }
}
