//! `SessionStore`: the one process that owns the session table, so sessions need no lock.
//!
//! It expires idle sessions itself, looking every quarter of the anonymous idle limit
//! (between 10 ms and 5 s), gives the allocator's free memory back once a burst of new
//! sessions has ended (`trim.rs`), and tells administrators how many it holds
//! (`GET /status/sessions`).

use std::time::{Duration, Instant};

use whirl::prelude::*;
use whirl_http::Response;

use super::messages::{Login, Resolve, Respond, SessionResolved, SessionStats, Sweep};
use crate::config::Users;
use crate::sessions::{Resolved, Session, SessionLimits, Sessions, SESSION_COOKIE};
use crate::trim::{give_back_free_memory, TrimAfterBursts};

#[process(group = "sessions")]
pub struct SessionStore {
    sessions: Sessions,
    users: Users,
    limits: SessionLimits,
    trim: TrimAfterBursts,
}

impl SessionStore {
    pub fn new(users: Users, limits: SessionLimits) -> Self {
        SessionStore {
            sessions: Sessions::new(limits),
            users,
            limits,
            trim: TrimAfterBursts::default(),
        }
    }

    fn arm_sweep(&self, ctx: &mut Ctx<Self>) {
        let every = (self.limits.anonymous_idle / 4)
            .clamp(Duration::from_millis(10), Duration::from_secs(5));
        let _ = ctx.post_after(every, Sweep);
    }
}

/// The value of `key` in an `application/x-www-form-urlencoded` body (`+` and `%XX`
/// decoded); `None` if absent or not valid UTF-8.
fn form_value(body: &[u8], key: &str) -> Option<String> {
    let text = std::str::from_utf8(body).ok()?;
    let raw = text
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| *k == key)?
        .1;
    let mut out = Vec::with_capacity(raw.len());
    let mut bytes = raw.bytes();
    while let Some(b) = bytes.next() {
        match b {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = [bytes.next()?, bytes.next()?];
                let hex = std::str::from_utf8(&hex).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
            }
            other => out.push(other),
        }
    }
    String::from_utf8(out).ok()
}

#[process]
impl SessionStore {
    #[started]
    fn start(&mut self, ctx: &mut Ctx<Self>) {
        self.arm_sweep(ctx);
    }

    #[handle]
    fn sweep(&mut self, _: Sweep, ctx: &mut Ctx<Self>) {
        self.sessions.expire(Instant::now());
        if self.trim.look() {
            give_back_free_memory();
        }
        self.arm_sweep(ctx);
    }

    #[handle]
    fn stats(&mut self, SessionStats { seq, conn }: SessionStats) {
        let body = format!(
            "sessions {}\nclients {}\n",
            self.sessions.len(),
            self.sessions.clients()
        );
        let response = Response::ok("text/plain; charset=utf-8", body);
        let _ = conn.post(Respond { seq, response });
    }

    #[handle]
    fn resolve(
        &mut self,
        Resolve {
            token,
            start,
            conn,
            peer,
        }: Resolve,
    ) {
        let now = Instant::now();
        let known = token
            .as_deref()
            .and_then(|t| self.sessions.lookup(t, now))
            .cloned();
        let resolved = match known {
            Some(session) => Resolved {
                session,
                new_token: None,
            },
            // Where no session starts: the connection's own, nothing stored.
            None if !start => Resolved {
                session: Session::for_connection(conn.id()),
                new_token: None,
            },
            None => match self.sessions.anonymous(peer, now) {
                Ok((token, session)) => {
                    self.trim.created();
                    Resolved {
                        session,
                        new_token: Some(token),
                    }
                }
                // No token can be made (the OS random source failed): serve this request on
                // its connection's session, rather than hand out a guessable token.
                Err(e) => {
                    eprintln!("iris_http: cannot create a session token: {e}");
                    Resolved {
                        session: Session::for_connection(conn.id()),
                        new_token: None,
                    }
                }
            },
        };
        let _ = conn.post(SessionResolved { resolved });
    }

    #[handle]
    fn login(
        &mut self,
        Login {
            body,
            seq,
            conn,
            peer,
        }: Login,
    ) {
        let user = form_value(&body, "user");
        let password = form_value(&body, "password");
        let role = match (&user, &password) {
            (Some(u), Some(p)) => self.users.check(u, p),
            _ => None,
        };
        let response = match (role, user) {
            (Some(role), Some(user)) => {
                match self.sessions.login(role, &user, peer, Instant::now()) {
                    Ok((token, _)) => {
                        self.trim.created();
                        let body = format!("welcome {user} ({})\n", role.name());
                        Response::ok("text/plain; charset=utf-8", body)
                            .with_cookie(SESSION_COOKIE, &token)
                    }
                    Err(e) => {
                        eprintln!("iris_http: cannot create a session token: {e}");
                        Response::service_unavailable(1)
                    }
                }
            }
            _ => Response::error(401),
        };
        let _ = conn.post(Respond { seq, response });
    }
}

#[cfg(test)]
mod tests {
    use super::form_value;

    #[test]
    fn form_values_are_decoded() {
        let body = b"user=alice&password=won+der%26land";
        assert_eq!(form_value(body, "user").as_deref(), Some("alice"));
        assert_eq!(
            form_value(body, "password").as_deref(),
            Some("won der&land")
        );
        assert_eq!(form_value(body, "missing"), None);
        assert_eq!(form_value(b"user=%zz", "user"), None);
        assert_eq!(form_value(b"user=%4", "user"), None);
        assert_eq!(form_value(&[0xff, b'='], "user"), None);
    }
}
