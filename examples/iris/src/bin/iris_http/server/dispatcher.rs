//! `Dispatcher`: routes a session's requests to handler processes in their handler groups: a
//! file handler of the session's own, started at its first file request and reused (no spawn
//! per request), and a new resource handler per request. When a handler group refuses, it
//! tries the cheaper variant (a low-quality file), and failing that answers 503.

use std::fmt::Write as _;
use std::net::IpAddr;
use std::sync::Arc;

use whirl::prelude::*;
use whirl_http::{Conditions, Request, Response};

use super::handlers::{live_or_spawn, FileHandler, ResourceHandler};
use super::messages::{
    FileRequest, FileRequestIo, ListRequest, Login, Quality, Respond, RespondFile, Retire, Route,
    SessionStats, ShowRequest,
};
use super::site::Site;
use crate::routes::{self, Route as Path};
use crate::sessions::Role;

/// One per connection and session; runs in the "dispatcher" group, whose predicate sheds
/// whole sessions, lowest priority first.
///
/// It knows its connection only by the answers it takes (`conn`, `conn_file`), not by its
/// type: the connection spawns dispatchers, and imports point one way.
#[process(group = "dispatcher")]
pub struct Dispatcher {
    site: Arc<Site>,
    /// The connection's answers.
    conn: Recipient<Respond>,
    /// The connection's answers whose body is a file region.
    conn_file: Recipient<RespondFile>,
    role: Role,
    /// The client's address (a login's session is counted against it).
    peer: IpAddr,
    /// The session's file handler, once it asked for a file. It carries this dispatcher's
    /// principal, and ends after its last request once told `Retire`.
    files: Option<Addr<FileHandler>>,
    /// The session's resource handler, likewise.
    resources: Option<Addr<ResourceHandler>>,
}

impl Dispatcher {
    pub fn new(
        site: Arc<Site>,
        conn: Recipient<Respond>,
        conn_file: Recipient<RespondFile>,
        role: Role,
        peer: IpAddr,
    ) -> Self {
        Dispatcher {
            site,
            conn,
            conn_file,
            role,
            peer,
            files: None,
            resources: None,
        }
    }

    fn respond(&self, seq: u64, response: Response) {
        // Fails only if the connection closed meanwhile: nobody to answer.
        let _ = self.conn.post(Respond { seq, response });
    }

    fn overloaded(&self, seq: u64) {
        self.respond(seq, self.site.shed.response());
    }

    /// The session's file handler, started now if it has none (or it ended).
    fn file_handler(&mut self, ctx: &mut Ctx<Self>) -> Addr<FileHandler> {
        let site = &self.site;
        live_or_spawn(&mut self.files, || {
            ctx.spawn(FileHandler::new(Arc::clone(site)))
        })
    }

    fn file(
        &mut self,
        path: String,
        request: &Request,
        index: bool,
        seq: u64,
        ctx: &mut Ctx<Self>,
    ) {
        let handler = self.file_handler(ctx);
        let high = FileRequest {
            path,
            quality: Quality::High,
            conditions: Conditions::of(request),
            directory_location: (!index).then(|| directory_location(request)),
            seq,
            conn: self.conn.clone(),
            conn_file: self.conn_file.clone(),
        };
        let refused = match self.post_file(&handler, high) {
            Ok(()) => return,
            Err(PostError::Rejected(refused)) => *refused,
            // Ended between the check and the post (it never does before `Retire`).
            Err(_) => return self.respond(seq, Response::error(500)),
        };
        // Figure 3: the group refused the expensive variant; the cheap one may still fit.
        let low = FileRequest {
            quality: Quality::Low,
            ..refused
        };
        match self.post_file(&handler, low) {
            Err(PostError::Rejected(_)) => self.overloaded(seq),
            // Ended between the check and the post (it never does before `Retire`).
            Err(_) => self.respond(seq, Response::error(500)),
            Ok(()) => {}
        }
    }

    /// Posts a file request, as one whose file an `AsyncFile` process reads with
    /// `--file-io-process`; a refused request comes back as it was (boxed: refusals are the
    /// rare path).
    fn post_file(
        &self,
        handler: &Addr<FileHandler>,
        request: FileRequest,
    ) -> Result<(), PostError<Box<FileRequest>>> {
        if !self.site.file_io_process {
            return handler.post(request).map_err(|e| e.map(Box::new));
        }
        handler
            .post(FileRequestIo(request))
            .map_err(|e| e.map(|FileRequestIo(request)| Box::new(request)))
    }

    /// The session's resource handler, started now if it has none (or it ended).
    fn resource_handler(&mut self, ctx: &mut Ctx<Self>) -> Addr<ResourceHandler> {
        let site = &self.site;
        live_or_spawn(&mut self.resources, || {
            ctx.spawn(ResourceHandler::new(Arc::clone(site)))
        })
    }

    fn list(&mut self, offset: usize, limit: usize, seq: u64, ctx: &mut Ctx<Self>) {
        let request = ListRequest {
            offset,
            limit,
            seq,
            conn: self.conn.clone(),
        };
        match self.resource_handler(ctx).post(request) {
            Ok(()) => {}
            Err(PostError::Rejected(_)) => self.overloaded(seq),
            // Ended between the check and the post (it never does before `Retire`).
            Err(_) => self.respond(seq, Response::error(500)),
        }
    }

    fn show(&mut self, id: u32, seq: u64, ctx: &mut Ctx<Self>) {
        let request = ShowRequest {
            id,
            seq,
            conn: self.conn.clone(),
        };
        match self.resource_handler(ctx).post(request) {
            Ok(()) => {}
            Err(PostError::Rejected(_)) => self.overloaded(seq),
            // Ended between the check and the post (it never does before `Retire`).
            Err(_) => self.respond(seq, Response::error(500)),
        }
    }

    /// The runtime's statistics as JSON, for administrators and tools.
    fn status_json(&self, ctx: &mut Ctx<Self>) -> Response {
        if self.role != Role::Admin {
            return Response::error(403);
        }
        match serde_json::to_vec(&ctx.runtime_stats()) {
            Ok(body) => Response::ok("application/json", body),
            Err(_) => Response::error(500),
        }
    }

    /// The runtime's statistics, for administrators.
    fn status(&self, ctx: &mut Ctx<Self>) -> Response {
        if self.role != Role::Admin {
            return Response::error(403);
        }
        let stats = ctx.runtime_stats();
        let mut page = format!(
            "live processes {}\nposted {} handled {} rejected {}\n\n",
            stats.live_processes, stats.counts.posted, stats.counts.handled, stats.counts.rejected
        );
        for g in &stats.groups {
            let _ = writeln!(
                page,
                "{:<12} threads {} queued {:>5} handled {:>8} rejected {:>7} queue p90 {:?} handling p90 {:?}",
                g.name, g.threads, g.queue_length, g.counts.handled, g.counts.rejected,
                g.queue_latency.p90, g.handling_time.p90
            );
        }
        Response::ok("text/plain; charset=utf-8", page)
    }
}

/// The target of `request` with a `/` added to its path: where a request for a directory
/// without the trailing slash is sent, so that relative links in its index resolve inside
/// it. The path is kept as the client encoded it.
fn directory_location(request: &Request) -> String {
    let query = request.query.as_deref();
    // One allocation of the right size (a `format!` grows its string).
    let mut location = String::with_capacity(request.path.len() + 2 + query.map_or(0, str::len));
    location.push_str(&request.path);
    location.push('/');
    if let Some(query) = query {
        location.push('?');
        location.push_str(query);
    }
    location
}

#[process]
impl Dispatcher {
    #[handle]
    fn route(&mut self, Route { request, seq }: Route, ctx: &mut Ctx<Self>) {
        match routes::route(&request) {
            Path::Login => {
                let login = Login {
                    body: request.body,
                    seq,
                    conn: self.conn.clone(),
                    peer: self.peer,
                };
                if self.site.sessions.post(login).is_err() {
                    self.respond(seq, Response::error(500));
                }
            }
            Path::File { path, index } => self.file(path, &request, index, seq, ctx),
            Path::Redirect { location } => {
                self.respond(seq, Response::error(301).with_header("Location", location));
            }
            Path::ListResources { offset, limit } => self.list(offset, limit, seq, ctx),
            Path::ShowResource { id } => self.show(id, seq, ctx),
            Path::Status => {
                let page = self.status(ctx);
                self.respond(seq, page);
            }
            Path::StatusSessions if self.role == Role::Admin => {
                let ask = SessionStats {
                    seq,
                    conn: self.conn.clone(),
                };
                if self.site.sessions.post(ask).is_err() {
                    self.respond(seq, Response::error(500));
                }
            }
            Path::StatusSessions => self.respond(seq, Response::error(403)),
            Path::StatusJson => {
                let page = self.status_json(ctx);
                self.respond(seq, page);
            }
            Path::MethodNotAllowed { allow } => {
                self.respond(seq, Response::error(405).with_header("Allow", allow));
            }
            other => {
                let status = other.error_status().unwrap_or(404);
                self.respond(seq, Response::error(status));
            }
        }
    }

    #[handle]
    fn retire(&mut self, _: Retire, ctx: &mut Ctx<Self>) {
        ctx.complete();
    }

    /// However it ends, its handlers end once they have answered what they were sent.
    #[terminated]
    fn ended(&mut self, _: &ExitReason) {
        if let Some(files) = self.files.take() {
            let _ = files.post(Retire);
        }
        if let Some(resources) = self.resources.take() {
            let _ = resources.post(Retire);
        }
    }
}
