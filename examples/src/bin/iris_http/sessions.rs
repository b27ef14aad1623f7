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
use std::time::{SystemTime, UNIX_EPOCH};

use crate::http::Request;

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
    rng: SplitMix64,
}

impl Sessions {
    /// An empty table holding at most `capacity` sessions (at least 1).
    pub fn new(capacity: usize) -> Self {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        Sessions::with_seed(capacity, nanos)
    }

    /// As [`new`](Sessions::new) with a fixed token seed, for reproducible tests.
    pub fn with_seed(capacity: usize, seed: u64) -> Self {
        Sessions {
            by_token: HashMap::new(),
            anonymous: BTreeMap::new(),
            named: BTreeMap::new(),
            capacity: capacity.max(1),
            next_id: 1,
            next_stamp: 0,
            rng: SplitMix64(seed),
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

    /// A new session for a logged-in `user` with `role`, and its token.
    pub fn login(&mut self, role: Role, user: &str) -> (String, Session) {
        self.insert(role, Some(user.to_string()))
    }

    /// A new anonymous session and its token.
    pub fn anonymous(&mut self) -> (String, Session) {
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
        let (token, session) = self.anonymous();
        Resolved {
            session,
            new_token: Some(token),
        }
    }

    fn insert(&mut self, role: Role, user: Option<String>) -> (String, Session) {
        while self.by_token.len() >= self.capacity {
            self.evict_one();
        }
        let mut token = self.rng.token();
        while self.by_token.contains_key(&token) {
            token = self.rng.token();
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
        (token, session)
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

/// SplitMix64 seeded from the clock: tokens look random and do not repeat, but they are
/// NOT cryptographically unpredictable. Good enough for a demo whose sessions only steer
/// load shedding; a real deployment would use the OS random source.
#[derive(whirl::Isolated, Debug)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn token(&mut self) -> String {
        format!("{:016x}{:016x}", self.next(), self.next())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::RequestDecoder;

    fn request_with_cookie(cookie: &str) -> Request {
        let mut decoder = RequestDecoder::default();
        decoder.feed(format!("GET / HTTP/1.1\r\nCookie: {cookie}\r\n\r\n").as_bytes());
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
        let mut sessions = Sessions::with_seed(10, 1);
        let (token, session) = sessions.login(Role::Admin, "admin");
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
        let mut sessions = Sessions::with_seed(1000, 7);
        let mut seen = std::collections::HashSet::new();
        let mut last = 0;
        for _ in 0..500 {
            let (token, session) = sessions.anonymous();
            assert_eq!(token.len(), TOKEN_LEN);
            assert!(token.bytes().all(|b| b.is_ascii_hexdigit()));
            assert!(seen.insert(token));
            assert!(session.id > last);
            last = session.id;
        }
    }

    #[test]
    fn cap_evicts_least_recently_used_anonymous_first() {
        let mut sessions = Sessions::with_seed(3, 2);
        let (user, _) = sessions.login(Role::User, "alice");
        let (a1, _) = sessions.anonymous();
        let (a2, _) = sessions.anonymous();
        assert!(sessions.lookup(&a1).is_some()); // a1 is now more recent than a2
        let (a3, _) = sessions.anonymous();
        assert_eq!(sessions.len(), 3);
        assert!(sessions.lookup(&a2).is_none());
        assert!(sessions.lookup(&user).is_some());
        // A flood of anonymous clients never pushes out the logged-in user.
        for _ in 0..100 {
            sessions.anonymous();
        }
        assert!(sessions.lookup(&user).is_some());
        assert!(sessions.lookup(&a1).is_none() && sessions.lookup(&a3).is_none());
        // With no anonymous sessions left, the oldest logged-in one goes.
        let mut named = Sessions::with_seed(2, 3);
        let (u1, _) = named.login(Role::User, "u1");
        let (u2, _) = named.login(Role::Admin, "u2");
        named.login(Role::User, "u3");
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
        let mut sessions = Sessions::with_seed(10, 4);
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
}
