//! The bytes of the two requests a session sends; built once per session so the loop itself
//! does not allocate.

use crate::cli::Credentials;

/// `GET path` with the session cookie when there is one. HTTP/1.1 keeps the connection open by
/// default, which is the point: the loop reuses it until the server says otherwise.
pub fn get(path: &str, host: &str, cookie: Option<&str>) -> Vec<u8> {
    let mut r = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: whirl-loadgen\r\n");
    if let Some(cookie) = cookie {
        r.push_str("Cookie: ");
        r.push_str(cookie);
        r.push_str("\r\n");
    }
    r.push_str("\r\n");
    r.into_bytes()
}

/// `POST /login` with a form body.
pub fn login(host: &str, cred: &Credentials) -> Vec<u8> {
    let body = format!(
        "user={}&password={}",
        form_encode(&cred.user),
        form_encode(&cred.password)
    );
    format!(
        "POST /login HTTP/1.1\r\nHost: {host}\r\nUser-Agent: whirl-loadgen\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// `application/x-www-form-urlencoded`, so credentials containing `&`, `=` or spaces survive.
fn form_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'*' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_carries_cookie_only_when_given() {
        let with = String::from_utf8(get("/r", "h:1", Some("session=abc"))).unwrap();
        assert_eq!(
            with,
            "GET /r HTTP/1.1\r\nHost: h:1\r\nUser-Agent: whirl-loadgen\r\nCookie: session=abc\r\n\r\n"
        );
        let without = String::from_utf8(get("/r", "h:1", None)).unwrap();
        assert!(!without.contains("Cookie"));
    }

    #[test]
    fn login_body_is_form_encoded_with_length() {
        let cred = Credentials {
            user: "a b".into(),
            password: "p&q=r".into(),
        };
        let req = String::from_utf8(login("h", &cred)).unwrap();
        let body = "user=a+b&password=p%26q%3Dr";
        assert!(req.ends_with(&format!("\r\n\r\n{body}")));
        assert!(req.contains(&format!("Content-Length: {}\r\n", body.len())));
    }
}
