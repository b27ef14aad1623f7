//! What every answer gets on its way out of a connection, whoever made it (a handler, the
//! session store, the connection itself): the site's cookie and transport rules, applied in
//! one place so that no answer can miss them.
//!
//! - Every cookie is `HttpOnly` and `SameSite=Lax` (scripts cannot read it, other sites'
//!   pages cannot send it with their requests) and, over TLS, `Secure` (a browser never
//!   sends it over plain HTTP, where it could be read on the way).
//! - An answer that sets a cookie is `Cache-Control: private`: a shared cache must not store
//!   it and hand one client's session to the next.
//! - Over TLS with HSTS configured (`--hsts-max-age`), every answer carries
//!   `Strict-Transport-Security`; never over plain HTTP, where a browser ignores it and an
//!   attacker could forge it.
//!
//! A leaf of the server's modules: it reads the site's settings and edits a response.

use whirl_http::Response;

use super::site::Site;

/// `response` with the site's rules applied (see the module documentation).
pub fn seal(site: &Site, mut response: Response) -> Response {
    let mut sets_cookie = false;
    for (name, value) in &mut response.headers {
        if !name.eq_ignore_ascii_case("set-cookie") {
            continue;
        }
        sets_cookie = true;
        let mut required = vec!["HttpOnly", "SameSite=Lax"];
        if site.tls {
            required.push("Secure");
        }
        for attribute in required {
            let key = attribute.split('=').next().unwrap_or(attribute);
            if !has_attribute(value, key) {
                let value = value.to_mut();
                value.push_str("; ");
                value.push_str(attribute);
            }
        }
    }
    if sets_cookie {
        response = private(response);
    }
    if let (true, Some(max_age)) = (site.tls, site.hsts) {
        let present = response
            .headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("strict-transport-security"));
        if !present {
            let value = format!("max-age={}", max_age.as_secs());
            response = response.with_header("Strict-Transport-Security", value);
        }
    }
    response
}

/// Whether the `Set-Cookie` value `cookie` has the attribute `key` (after its first `;`,
/// case-insensitive, with or without a value).
fn has_attribute(cookie: &str, key: &str) -> bool {
    cookie.split(';').skip(1).any(|attribute| {
        let name = attribute.split('=').next().unwrap_or_default().trim();
        name.eq_ignore_ascii_case(key)
    })
}

/// `response` with `Cache-Control: private`, the directives it had kept but `public`
/// (which would contradict it); left alone if it already says `private` or `no-store`.
fn private(mut response: Response) -> Response {
    let directives = |value: &str| -> Vec<String> {
        value
            .split(',')
            .map(|d| d.trim().to_owned())
            .filter(|d| !d.is_empty())
            .collect()
    };
    let mut kept = vec!["private".to_owned()];
    let mut found = false;
    for (name, value) in &response.headers {
        if !name.eq_ignore_ascii_case("cache-control") {
            continue;
        }
        found = true;
        for directive in directives(value) {
            let plain = directive.to_ascii_lowercase();
            if plain == "private" || plain == "no-store" {
                return response;
            }
            if plain != "public" {
                kept.push(directive);
            }
        }
    }
    if found {
        response
            .headers
            .retain(|(name, _)| !name.eq_ignore_ascii_case("cache-control"));
    }
    response.with_header("Cache-Control", kept.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_are_found_whatever_their_case_and_value() {
        let cookie = "session=ab; Path=/; httponly; samesite=Strict";
        assert!(has_attribute(cookie, "HttpOnly"));
        assert!(has_attribute(cookie, "SameSite"));
        assert!(!has_attribute(cookie, "Secure"));
        assert!(
            !has_attribute("Secure=1", "Secure"),
            "the name=value is no attribute"
        );
    }

    #[test]
    fn private_keeps_other_directives_and_drops_public() {
        let with = |value: &'static str| {
            let response = Response::new(200).with_header("Cache-Control", value);
            private(response)
                .headers
                .into_iter()
                .filter(|(n, _)| n == "Cache-Control")
                .map(|(_, v)| v)
                .collect::<Vec<_>>()
        };
        assert_eq!(with("public, max-age=60"), ["private, max-age=60"]);
        assert_eq!(with("no-store"), ["no-store"]);
        assert_eq!(with("Private"), ["Private"]);
        let none = private(Response::new(200));
        assert_eq!(none.headers, [("Cache-Control".into(), "private".into())]);
    }
}
