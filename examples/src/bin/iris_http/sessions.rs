//! HTTP sessions: the paper's server gives each session its own principal, so that shedding
//! treats every request of a page load alike and ranks administrators above users above
//! anonymous clients.
//!
//! The table is plain data for one process to own. Anonymous clients get a session (and a
//! cookie) too, otherwise each of their requests would be a new principal and
//! session-consistent shedding could not keep a page load whole. The table is capped, least
//! recently used anonymous sessions going first, so a flood of cookie-less clients cannot
//! exhaust memory or push out logged-in users.

use std::collections::{BTreeMap, HashMap};

use whirl_http::Request;

/// The cookie holding the session token.
pub const SESSION_COOKIE: &str = "session";

/// Hex digits in a token (128 bits).
const TOKEN_LEN: usize = 32;

/// Who a session acts for, which sets its principal's priority.
#[derive(whirl::Isolated, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// May see the status page; must get through even under overload.
    Admin,
    /// An authenticated user.
    User,
    /// No login: shed first.
    Anonymous,
}

impl Role {
    /// The principal priority, higher is more important: admin 2, user 1, anonymous 0.
    pub fn priority(self) -> u8 {
        match self {
            Role::Admin => 2,
            Role::User => 1,
            Role::Anonymous => 0,
        }
    }

    /// The principal class for class-based predicates and schedulers: one class per role,
    /// numbered like the priority.
    pub fn class(self) -> u16 {
        u16::from(self.priority())
    }

    /// Its lowercase name, as in the users file.
    pub fn name(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::User => "user",
            Role::Anonymous => "anonymous",
        }
    }
}

/// One session; `id` is the principal id.
#[derive(whirl::Isolated, Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// Unique for the table's life, starting at 1.
    pub id: u64,
    /// Its role.
    pub role: Role,
    /// The user name for logged-in sessions.
    pub user: Option<String>,
}

/// The session of a request: an existing one, or a fresh anonymous one whose token the
/// response must set as a cookie.
#[derive(whirl::Isolated, Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The session.
    pub session: Session,
    /// `Some(token)` if the session was just created.
    pub new_token: Option<String>,
}

#[derive(whirl::Isolated, Debug)]
struct Entry {
    session: Session,
    /// Position in the recency order (larger is more recent).
    stamp: u64,
}

/// Token → session, with a cap on entries.
#[derive(whirl::Isolated, Debug)]
pub struct Sessions {
    by_token: HashMap<String, Entry>,
    /// Recency order of anonymous sessions: stamp → token.
    anonymous: BTreeMap<u64, String>,
    /// Recency order of logged-in sessions.
    named: BTreeMap<u64, String>,
    capacity: usize,
    next_id: u64,
    next_stamp: u64,
}

impl Sessions {
    /// An empty table holding at most `capacity` sessions (at least 1).
    pub fn new(capacity: usize) -> Self {
        Sessions {
            by_token: HashMap::new(),
            anonymous: BTreeMap::new(),
            named: BTreeMap::new(),
            capacity: capacity.max(1),
            next_id: 1,
            next_stamp: 0,
        }
    }

    #[cfg(test)]
    /// Sessions held.
    pub fn len(&self) -> usize {
        self.by_token.len()
    }

    #[cfg(test)]
    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.by_token.is_empty()
    }

    /// A new session for a logged-in `user` with `role`, and its token; fails only if the
    /// operating system's random source does.
    pub fn login(&mut self, role: Role, user: &str) -> Result<(String, Session), getrandom::Error> {
        self.insert(role, Some(user.to_string()))
    }

    /// A new anonymous session and its token; fails only if the operating system's random
    /// source does.
    pub fn anonymous(&mut self) -> Result<(String, Session), getrandom::Error> {
        self.insert(Role::Anonymous, None)
    }

    /// The session for `token`, marking it recently used.
    pub fn lookup(&mut self, token: &str) -> Option<&Session> {
        let stamp = self.next_stamp;
        let entry = self.by_token.get_mut(token)?;
        let order = match entry.session.role {
            Role::Anonymous => &mut self.anonymous,
            Role::Admin | Role::User => &mut self.named,
        };
        if let Some(token) = order.remove(&entry.stamp) {
            order.insert(stamp, token);
        }
        entry.stamp = stamp;
        self.next_stamp += 1;
        Some(&entry.session)
    }

    #[cfg(test)]
    /// Ends the session for `token` (logout, or replacing an anonymous session at login).
    pub fn remove(&mut self, token: &str) -> Option<Session> {
        let entry = self.by_token.remove(token)?;
        self.anonymous.remove(&entry.stamp);
        self.named.remove(&entry.stamp);
        Some(entry.session)
    }

    #[cfg(test)]
    /// The session named by the request's cookie, or a fresh anonymous one when there is no
    /// cookie or it names no session (expired, evicted, forged).
    pub fn resolve(&mut self, request: &Request) -> Resolved {
        if let Some(session) = session_token(request).and_then(|t| self.lookup(t)) {
            return Resolved {
                session: session.clone(),
                new_token: None,
            };
        }
        let (token, session) = self
            .anonymous()
            .expect("the OS random source works in tests");
        Resolved {
            session,
            new_token: Some(token),
        }
    }

    fn insert(
        &mut self,
        role: Role,
        user: Option<String>,
    ) -> Result<(String, Session), getrandom::Error> {
        let mut token = new_token()?;
        while self.by_token.contains_key(&token) {
            token = new_token()?;
        }
        while self.by_token.len() >= self.capacity {
            self.evict_one();
        }
        let session = Session {
            id: self.next_id,
            role,
            user,
        };
        self.next_id += 1;
        let stamp = self.next_stamp;
        self.next_stamp += 1;
        match role {
            Role::Anonymous => self.anonymous.insert(stamp, token.clone()),
            Role::Admin | Role::User => self.named.insert(stamp, token.clone()),
        };
        self.by_token.insert(
            token.clone(),
            Entry {
                session: session.clone(),
                stamp,
            },
        );
        Ok((token, session))
    }

    /// Drops the least recently used anonymous session, or failing that the least recently
    /// used logged-in one.
    fn evict_one(&mut self) {
        let victim = self
            .anonymous
            .pop_first()
            .or_else(|| self.named.pop_first());
        match victim {
            Some((_, token)) => {
                self.by_token.remove(&token);
            }
            // The orders and the map hold the same tokens; an empty order means an empty
            // map, so there is nothing left to evict.
            None => self.by_token.clear(),
        }
    }
}

/// The session token from `Cookie: ...; session=TOKEN`, if it has the shape of one of ours
/// (so junk is never hashed or echoed back).
pub fn session_token(request: &Request) -> Option<&str> {
    request
        .cookies()
        .filter(|(name, _)| *name == SESSION_COOKIE)
        .map(|(_, value)| value)
        .find(|value| value.len() == TOKEN_LEN && value.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// A fresh session token: 128 bits from the operating system's cryptographically secure
/// random source, as 32 hex digits. A guessed token would be a stolen session, so nothing
/// predictable (a clock, a counter, a seeded generator) goes into it.
fn new_token() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; TOKEN_LEN / 2];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use whirl_http::RequestDecoder;

    fn request_with_cookie(cookie: &str) -> Request {
        let mut decoder = RequestDecoder::default();
        decoder.feed(format!("GET / HTTP/1.1\r\nHost: x\r\nCookie: {cookie}\r\n\r\n").as_bytes());
        decoder.next_request().unwrap().unwrap()
    }

    #[test]
    fn role_priorities_and_classes() {
        assert!(Role::Admin.priority() > Role::User.priority());
        assert!(Role::User.priority() > Role::Anonymous.priority());
        assert_eq!(
            [Role::Admin, Role::User, Role::Anonymous].map(Role::class),
            [2, 1, 0]
        );
        assert_eq!(Role::Admin.name(), "admin");
    }

    #[test]
    fn login_then_lookup() {
        let mut sessions = Sessions::new(10);
        let (token, session) = sessions.login(Role::Admin, "admin").unwrap();
        assert_eq!(session.role, Role::Admin);
        assert_eq!(session.user.as_deref(), Some("admin"));
        assert_eq!(sessions.lookup(&token), Some(&session));
        assert_eq!(sessions.lookup("nope"), None);
        assert_eq!(sessions.remove(&token), Some(session));
        assert_eq!(sessions.lookup(&token), None);
        assert!(sessions.is_empty());
    }

    #[test]
    fn tokens_are_distinct_hex_and_ids_increase() {
        let mut sessions = Sessions::new(1000);
        let mut seen = std::collections::HashSet::new();
        let mut last = 0;
        for _ in 0..500 {
            let (token, session) = sessions.anonymous().unwrap();
            assert_eq!(token.len(), TOKEN_LEN);
            assert!(token.bytes().all(|b| b.is_ascii_hexdigit()));
            assert!(seen.insert(token));
            assert!(session.id > last);
            last = session.id;
        }
    }

    #[test]
    fn cap_evicts_least_recently_used_anonymous_first() {
        let mut sessions = Sessions::new(3);
        let (user, _) = sessions.login(Role::User, "alice").unwrap();
        let (a1, _) = sessions.anonymous().unwrap();
        let (a2, _) = sessions.anonymous().unwrap();
        assert!(sessions.lookup(&a1).is_some()); // a1 is now more recent than a2
        let (a3, _) = sessions.anonymous().unwrap();
        assert_eq!(sessions.len(), 3);
        assert!(sessions.lookup(&a2).is_none());
        assert!(sessions.lookup(&user).is_some());
        // A flood of anonymous clients never pushes out the logged-in user.
        for _ in 0..100 {
            sessions.anonymous().unwrap();
        }
        assert!(sessions.lookup(&user).is_some());
        assert!(sessions.lookup(&a1).is_none() && sessions.lookup(&a3).is_none());
        // With no anonymous sessions left, the oldest logged-in one goes.
        let mut named = Sessions::new(2);
        let (u1, _) = named.login(Role::User, "u1").unwrap();
        let (u2, _) = named.login(Role::Admin, "u2").unwrap();
        named.login(Role::User, "u3").unwrap();
        assert!(named.lookup(&u1).is_none() && named.lookup(&u2).is_some());
    }

    #[test]
    fn session_token_from_cookie_header() {
        let token = "0123456789abcdef0123456789ABCDEF";
        let r = request_with_cookie(&format!("a=b; session={token}"));
        assert_eq!(session_token(&r), Some(token));
        assert_eq!(session_token(&request_with_cookie("session=short")), None);
        assert_eq!(
            session_token(&request_with_cookie(
                "session=zz23456789abcdef0123456789abcdef"
            )),
            None
        );
        assert_eq!(session_token(&request_with_cookie("other=1")), None);
    }

    #[test]
    fn resolve_keeps_the_session_across_requests() {
        let mut sessions = Sessions::new(10);
        let first = sessions.resolve(&request_with_cookie("x=1"));
        assert_eq!(first.session.role, Role::Anonymous);
        let Some(token) = first.new_token.clone() else {
            panic!("a cookie-less client gets a new token");
        };
        let again = sessions.resolve(&request_with_cookie(&format!("session={token}")));
        assert_eq!(again.session, first.session);
        assert_eq!(again.new_token, None);
        let forged = sessions.resolve(&request_with_cookie(
            "session=00000000000000000000000000000000",
        ));
        assert!(forged.new_token.is_some());
        assert_ne!(forged.session.id, first.session.id);
    }

    #[test]
    fn tokens_are_128_random_bits_in_hex_and_distinct() {
        let mut sessions = Sessions::new(10_000);
        let tokens: std::collections::HashSet<String> =
            (0..1000).map(|_| sessions.anonymous().unwrap().0).collect();
        assert_eq!(tokens.len(), 1000, "no two tokens alike");
        for token in &tokens {
            assert_eq!(token.len(), TOKEN_LEN);
            assert!(token.bytes().all(|b| b.is_ascii_hexdigit()));
        }
        // Not a counter or a clock: consecutive tokens share no long prefix.
        let a = sessions.anonymous().unwrap().0;
        let b = sessions.anonymous().unwrap().0;
        assert_ne!(a[..8], b[..8]);
    }
}
