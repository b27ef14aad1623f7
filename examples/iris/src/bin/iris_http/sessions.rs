//! HTTP sessions: the paper's server gives each session its own principal, so that shedding
//! treats every request of a page load alike and ranks administrators above users above
//! anonymous clients.
//!
//! The table is plain data for one process to own. A session starts where the site needs
//! one: a login starts a named one, and a request under one of the configured session paths
//! (`/resources` by default) starts an anonymous one for a client that has none, so that
//! session-consistent shedding keeps a client's work together. Elsewhere (static files
//! above all) a client without a session is served as a session of its connection
//! ([`Session::for_connection`]): a principal of its own, with no cookie and no entry in the
//! table, gone with the connection. Three limits keep a flood of
//! cookie-less clients (a reconnect storm) from exhausting memory or pushing out logged-in
//! users ([`SessionLimits`]):
//!
//! * **per client**: each client address holds at most `per_client` sessions; a new one
//!   replaces that client's least recently used anonymous session (or, failing that, its
//!   least recently used logged-in one);
//! * **idle expiry**: [`Sessions::expire`] drops anonymous sessions unused for
//!   `anonymous_idle` (seconds) and logged-in ones unused for `named_idle` (much longer), and
//!   shrinks the table's storage when it has emptied, so the memory goes back;
//! * **overall**: at most `capacity` sessions, least recently used anonymous ones going
//!   first.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::time::{Duration, Instant};

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

/// The ids of connection sessions have this bit set; the table's start at 1 and count up,
/// so the two never meet.
const CONNECTION_IDS: u64 = 1 << 63;

/// One session; `id` is the principal id.
#[derive(whirl::Isolated, Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// Unique for the process's life: a table's sessions count from 1, connection sessions
    /// have the top bit set.
    pub id: u64,
    /// Its role.
    pub role: Role,
    /// The user name for logged-in sessions.
    pub user: Option<String>,
}

impl Session {
    /// An anonymous session for one connection of a client without a session, where none
    /// is started (a static file): its own principal, not in the table, no cookie. Its id is
    /// the connection process's (unique for the runtime's life), with the top bit set.
    pub fn for_connection(connection: whirl::ProcessId) -> Session {
        Session {
            id: CONNECTION_IDS | (connection.as_u64() & !CONNECTION_IDS),
            role: Role::Anonymous,
            user: None,
        }
    }

    /// Whether this is a connection's session ([`Session::for_connection`]), not one of the
    /// table's.
    pub fn is_connection(&self) -> bool {
        self.id & CONNECTION_IDS != 0
    }
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

/// The session table's bounds.
#[derive(whirl::Isolated, Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    /// Sessions held at most.
    pub capacity: usize,
    /// Sessions held at most per client address.
    pub per_client: usize,
    /// An anonymous session unused this long is dropped.
    pub anonymous_idle: Duration,
    /// A logged-in session unused this long is dropped.
    pub named_idle: Duration,
}

impl Default for SessionLimits {
    /// 100,000 sessions, 64 per client, anonymous ones kept 10 s idle, logged-in ones 30 min.
    fn default() -> Self {
        SessionLimits {
            capacity: 100_000,
            per_client: 64,
            anonymous_idle: Duration::from_secs(10),
            named_idle: Duration::from_secs(30 * 60),
        }
    }
}

#[derive(whirl::Isolated, Debug)]
struct Entry {
    session: Session,
    /// Position in the recency order (larger is more recent).
    stamp: u64,
    /// When it was last used.
    used: Instant,
    /// The client it was created for.
    peer: IpAddr,
}

/// Token → session, bounded overall and per client, idle sessions expiring.
#[derive(whirl::Isolated, Debug)]
pub struct Sessions {
    by_token: HashMap<String, Entry>,
    /// Recency order of anonymous sessions: stamp → token.
    anonymous: BTreeMap<u64, String>,
    /// Recency order of logged-in sessions.
    named: BTreeMap<u64, String>,
    /// Each client's sessions, in recency order: stamp → token.
    by_peer: HashMap<IpAddr, BTreeMap<u64, String>>,
    limits: SessionLimits,
    next_id: u64,
    next_stamp: u64,
}

impl Sessions {
    /// An empty table with these limits (`capacity` and `per_client` at least 1).
    pub fn new(limits: SessionLimits) -> Self {
        Sessions {
            by_token: HashMap::new(),
            anonymous: BTreeMap::new(),
            named: BTreeMap::new(),
            by_peer: HashMap::new(),
            limits: SessionLimits {
                capacity: limits.capacity.max(1),
                per_client: limits.per_client.max(1),
                ..limits
            },
            next_id: 1,
            next_stamp: 0,
        }
    }

    /// Sessions held.
    pub fn len(&self) -> usize {
        self.by_token.len()
    }

    /// Client addresses holding sessions.
    pub fn clients(&self) -> usize {
        self.by_peer.len()
    }

    #[cfg(test)]
    /// Sessions held for `peer`.
    pub fn len_for(&self, peer: IpAddr) -> usize {
        self.by_peer.get(&peer).map_or(0, BTreeMap::len)
    }

    #[cfg(test)]
    /// Entries the token map has room for without growing (to check memory goes back).
    pub fn allocated(&self) -> usize {
        self.by_token.capacity()
    }

    #[cfg(test)]
    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.by_token.is_empty()
    }

    /// A new session for a logged-in `user` with `role`, and its token; fails only if the
    /// operating system's random source does.
    pub fn login(
        &mut self,
        role: Role,
        user: &str,
        peer: IpAddr,
        now: Instant,
    ) -> Result<(String, Session), getrandom::Error> {
        self.insert(role, Some(user.to_string()), peer, now)
    }

    /// A new anonymous session for `peer` and its token; fails only if the operating
    /// system's random source does.
    pub fn anonymous(
        &mut self,
        peer: IpAddr,
        now: Instant,
    ) -> Result<(String, Session), getrandom::Error> {
        self.insert(Role::Anonymous, None, peer, now)
    }

    /// The session for `token`, marking it used at `now`.
    pub fn lookup(&mut self, token: &str, now: Instant) -> Option<&Session> {
        let stamp = self.next_stamp;
        let entry = self.by_token.get_mut(token)?;
        let order = match entry.session.role {
            Role::Anonymous => &mut self.anonymous,
            Role::Admin | Role::User => &mut self.named,
        };
        if let Some(token) = order.remove(&entry.stamp) {
            order.insert(stamp, token);
        }
        if let Some(mine) = self.by_peer.get_mut(&entry.peer) {
            if let Some(token) = mine.remove(&entry.stamp) {
                mine.insert(stamp, token);
            }
        }
        entry.stamp = stamp;
        entry.used = entry.used.max(now);
        self.next_stamp += 1;
        Some(&entry.session)
    }

    /// Ends the session for `token`.
    pub fn remove(&mut self, token: &str) -> Option<Session> {
        let entry = self.by_token.remove(token)?;
        self.anonymous.remove(&entry.stamp);
        self.named.remove(&entry.stamp);
        if let Some(mine) = self.by_peer.get_mut(&entry.peer) {
            mine.remove(&entry.stamp);
            if mine.is_empty() {
                self.by_peer.remove(&entry.peer);
            }
        }
        Some(entry.session)
    }

    /// Drops the sessions idle for longer than their role's limit at `now`, and gives back
    /// the storage of a table that has shrunk to a quarter of its room. Returns how many were
    /// dropped.
    pub fn expire(&mut self, now: Instant) -> usize {
        let mut dropped = 0;
        let limits = self.limits;
        for (anonymous, idle) in [(true, limits.anonymous_idle), (false, limits.named_idle)] {
            // Recency order is use order: the oldest first, until one is still fresh.
            loop {
                let order = if anonymous {
                    &self.anonymous
                } else {
                    &self.named
                };
                let Some((_, token)) = order.first_key_value() else {
                    break;
                };
                let stale = self
                    .by_token
                    .get(token)
                    .is_none_or(|e| now.saturating_duration_since(e.used) >= idle);
                if !stale {
                    break;
                }
                let token = token.clone();
                if self.remove(&token).is_none() {
                    // An order entry without its session: drop the stray entry.
                    let order = if anonymous {
                        &mut self.anonymous
                    } else {
                        &mut self.named
                    };
                    order.pop_first();
                }
                dropped += 1;
            }
        }
        let len = self.by_token.len();
        if self.by_token.capacity() > 4 * len.max(16) {
            self.by_token.shrink_to(2 * len);
        }
        if self.by_peer.capacity() > 4 * self.by_peer.len().max(16) {
            self.by_peer.shrink_to(2 * self.by_peer.len());
        }
        dropped
    }

    #[cfg(test)]
    /// The session named by the request's cookie, or a fresh anonymous one when there is no
    /// cookie or it names no session (expired, evicted, forged).
    pub fn resolve(&mut self, request: &Request) -> Resolved {
        let now = Instant::now();
        if let Some(session) = session_token(request).and_then(|t| self.lookup(t, now)) {
            return Resolved {
                session: session.clone(),
                new_token: None,
            };
        }
        let peer = IpAddr::from([127, 0, 0, 1]);
        let (token, session) = self
            .anonymous(peer, now)
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
        peer: IpAddr,
        now: Instant,
    ) -> Result<(String, Session), getrandom::Error> {
        let mut token = new_token()?;
        while self.by_token.contains_key(&token) {
            token = new_token()?;
        }
        while self.len_of(peer) >= self.limits.per_client {
            self.evict_of(peer);
        }
        while self.by_token.len() >= self.limits.capacity {
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
        self.by_peer
            .entry(peer)
            .or_default()
            .insert(stamp, token.clone());
        self.by_token.insert(
            token.clone(),
            Entry {
                session: session.clone(),
                stamp,
                used: now,
                peer,
            },
        );
        Ok((token, session))
    }

    fn len_of(&self, peer: IpAddr) -> usize {
        self.by_peer.get(&peer).map_or(0, BTreeMap::len)
    }

    /// Drops `peer`'s least recently used anonymous session, or failing that its least
    /// recently used logged-in one.
    fn evict_of(&mut self, peer: IpAddr) {
        let Some(mine) = self.by_peer.get(&peer) else {
            return;
        };
        let anonymous = |token: &String| {
            self.by_token
                .get(token)
                .is_some_and(|e| e.session.role == Role::Anonymous)
        };
        let victim = mine
            .values()
            .find(|t| anonymous(t))
            .or_else(|| mine.values().next())
            .cloned();
        match victim {
            Some(token) => {
                if self.remove(&token).is_none() {
                    // A stray entry without its session.
                    if let Some(mine) = self.by_peer.get_mut(&peer) {
                        mine.retain(|_, t| *t != token);
                    }
                }
            }
            None => {
                self.by_peer.remove(&peer);
            }
        }
    }

    /// Drops the least recently used anonymous session, or failing that the least recently
    /// used logged-in one.
    fn evict_one(&mut self) {
        let victim = self
            .anonymous
            .first_key_value()
            .or_else(|| self.named.first_key_value())
            .map(|(_, token)| token.clone());
        match victim {
            Some(token) => {
                if self.remove(&token).is_none() {
                    self.anonymous.retain(|_, t| *t != token);
                    self.named.retain(|_, t| *t != token);
                }
            }
            // The orders and the map hold the same tokens; an empty order means an empty
            // map, so there is nothing left to evict.
            None => {
                self.by_token.clear();
                self.by_peer.clear();
            }
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

    const PEER: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

    /// A table of `capacity` without per-client bound or expiry in sight.
    fn table(capacity: usize) -> Sessions {
        Sessions::new(SessionLimits {
            capacity,
            per_client: usize::MAX,
            ..SessionLimits::default()
        })
    }

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
        let mut sessions = table(10);
        let (token, session) = sessions
            .login(Role::Admin, "admin", PEER, Instant::now())
            .unwrap();
        assert_eq!(session.role, Role::Admin);
        assert_eq!(session.user.as_deref(), Some("admin"));
        assert_eq!(sessions.lookup(&token, Instant::now()), Some(&session));
        assert_eq!(sessions.lookup("nope", Instant::now()), None);
        assert_eq!(sessions.remove(&token), Some(session));
        assert_eq!(sessions.lookup(&token, Instant::now()), None);
        assert!(sessions.is_empty());
    }

    #[test]
    fn tokens_are_distinct_hex_and_ids_increase() {
        let mut sessions = table(1000);
        let mut seen = std::collections::HashSet::new();
        let mut last = 0;
        for _ in 0..500 {
            let (token, session) = sessions.anonymous(PEER, Instant::now()).unwrap();
            assert_eq!(token.len(), TOKEN_LEN);
            assert!(token.bytes().all(|b| b.is_ascii_hexdigit()));
            assert!(seen.insert(token));
            assert!(session.id > last);
            last = session.id;
        }
    }

    #[test]
    fn cap_evicts_least_recently_used_anonymous_first() {
        let mut sessions = table(3);
        let (user, _) = sessions
            .login(Role::User, "alice", PEER, Instant::now())
            .unwrap();
        let (a1, _) = sessions.anonymous(PEER, Instant::now()).unwrap();
        let (a2, _) = sessions.anonymous(PEER, Instant::now()).unwrap();
        assert!(sessions.lookup(&a1, Instant::now()).is_some()); // a1 is now more recent than a2
        let (a3, _) = sessions.anonymous(PEER, Instant::now()).unwrap();
        assert_eq!(sessions.len(), 3);
        assert!(sessions.lookup(&a2, Instant::now()).is_none());
        assert!(sessions.lookup(&user, Instant::now()).is_some());
        // A flood of anonymous clients never pushes out the logged-in user.
        for _ in 0..100 {
            sessions.anonymous(PEER, Instant::now()).unwrap();
        }
        assert!(sessions.lookup(&user, Instant::now()).is_some());
        assert!(
            sessions.lookup(&a1, Instant::now()).is_none()
                && sessions.lookup(&a3, Instant::now()).is_none()
        );
        // With no anonymous sessions left, the oldest logged-in one goes.
        let mut named = table(2);
        let (u1, _) = named.login(Role::User, "u1", PEER, Instant::now()).unwrap();
        let (u2, _) = named
            .login(Role::Admin, "u2", PEER, Instant::now())
            .unwrap();
        named.login(Role::User, "u3", PEER, Instant::now()).unwrap();
        assert!(
            named.lookup(&u1, Instant::now()).is_none()
                && named.lookup(&u2, Instant::now()).is_some()
        );
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
        let mut sessions = table(10);
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
        let mut sessions = table(10_000);
        let tokens: std::collections::HashSet<String> = (0..1000)
            .map(|_| sessions.anonymous(PEER, Instant::now()).unwrap().0)
            .collect();
        assert_eq!(tokens.len(), 1000, "no two tokens alike");
        for token in &tokens {
            assert_eq!(token.len(), TOKEN_LEN);
            assert!(token.bytes().all(|b| b.is_ascii_hexdigit()));
        }
        // Not a counter or a clock: consecutive tokens share no long prefix.
        let a = sessions.anonymous(PEER, Instant::now()).unwrap().0;
        let b = sessions.anonymous(PEER, Instant::now()).unwrap().0;
        assert_ne!(a[..8], b[..8]);
    }

    #[test]
    fn each_client_holds_at_most_per_client_sessions_anonymous_going_first() {
        let mut sessions = Sessions::new(SessionLimits {
            per_client: 4,
            ..SessionLimits::default()
        });
        let other = IpAddr::from([10, 0, 0, 2]);
        let now = Instant::now();
        let (theirs, _) = sessions.anonymous(other, now).unwrap();
        let (user, _) = sessions.login(Role::User, "alice", PEER, now).unwrap();
        // A reconnect storm from one client: a thousand cookie-less connections.
        for _ in 0..1000 {
            sessions.anonymous(PEER, now).unwrap();
            assert!(sessions.len_for(PEER) <= 4);
        }
        assert_eq!(sessions.len_for(PEER), 4);
        assert_eq!(sessions.len(), 5);
        // Its logged-in session and the other client's survive.
        assert!(sessions.lookup(&user, now).is_some());
        assert!(sessions.lookup(&theirs, now).is_some());
        // Only logged-in sessions left to replace: the least recently used goes.
        let mut named = Sessions::new(SessionLimits {
            per_client: 2,
            ..SessionLimits::default()
        });
        let (u1, _) = named.login(Role::User, "u1", PEER, now).unwrap();
        let (u2, _) = named.login(Role::User, "u2", PEER, now).unwrap();
        assert!(named.lookup(&u1, now).is_some());
        named.login(Role::Admin, "u3", PEER, now).unwrap();
        assert!(named.lookup(&u2, now).is_none() && named.lookup(&u1, now).is_some());
    }

    #[test]
    fn idle_sessions_expire_by_role_and_the_memory_goes_back() {
        let limits = SessionLimits {
            per_client: usize::MAX,
            anonymous_idle: Duration::from_secs(10),
            named_idle: Duration::from_secs(600),
            ..SessionLimits::default()
        };
        let mut sessions = Sessions::new(limits);
        let start = Instant::now();
        let (user, _) = sessions.login(Role::User, "alice", PEER, start).unwrap();
        let (kept, _) = sessions.anonymous(PEER, start).unwrap();
        for i in 0..20_000u32 {
            let peer = IpAddr::from(i.to_be_bytes());
            sessions.anonymous(peer, start).unwrap();
        }
        let grown = sessions.allocated();
        assert!(grown >= 20_002);
        assert_eq!(sessions.expire(start + Duration::from_secs(5)), 0);
        // Used at 8 s: fresh at 12 s, when the others (idle since 0 s) have expired.
        assert!(sessions
            .lookup(&kept, start + Duration::from_secs(8))
            .is_some());
        assert_eq!(sessions.expire(start + Duration::from_secs(12)), 20_000);
        assert_eq!(sessions.len(), 2);
        assert!(
            sessions.allocated() < grown / 100,
            "{}",
            sessions.allocated()
        );
        assert!(sessions.lookup(&user, start).is_some());
        assert_eq!(sessions.expire(start + Duration::from_secs(19)), 1);
        assert!(sessions
            .lookup(&kept, start + Duration::from_secs(19))
            .is_none());
        // The logged-in session lasts its own, longer limit.
        assert!(sessions
            .lookup(&user, start + Duration::from_secs(19))
            .is_some());
        assert_eq!(sessions.expire(start + Duration::from_secs(620)), 1);
        assert_eq!(sessions.len(), 0);
        assert_eq!(sessions.len_for(PEER), 0);
    }
}
