//! The request handlers (one new process per request, carrying the session's principal) and
//! the processes they create: `AsyncFile` for blocking file reads, `DbConnection` for the
//! resource store.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use whirl::prelude::*;

use super::connection::HttpConnection;
use super::messages::{
    FileError, FileRead, FileRequest, ListRequest, Quality, Query, QueryKind, ReadFile, Respond,
    Rows, ShowRequest,
};
use super::Site;
use crate::http::Response;

/// Largest file served, bytes.
const MAX_FILE: u64 = 8 * 1024 * 1024;

/// Spends `d` on the CPU: the simulated cost of the work a real handler does (rendering,
/// resizing images), so that capacity is something the demo and the tests control.
fn work(d: Duration) {
    let end = Instant::now() + d;
    while Instant::now() < end {
        std::hint::spin_loop();
    }
}

fn respond(conn: &Addr<HttpConnection>, seq: u64, response: Response) {
    let _ = conn.post(Respond { seq, response });
}

fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()) {
        Some("html" | "htm") => "text/html; charset=utf-8",
        Some("txt") => "text/plain; charset=utf-8",
        Some("json") => "application/json",
        Some("css") => "text/css",
        Some("js") => "text/javascript",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("svg") => "image/svg+xml",
        _ => "application/octet-stream",
    }
}

/// `a/b.png` → `a/b.low.png`: the cheap variant, if the site has one.
fn low_variant(path: &Path) -> PathBuf {
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default();
    let name = match path.extension().and_then(|e| e.to_str()) {
        Some(ext) => format!("{stem}.low.{ext}"),
        None => format!("{stem}.low"),
    };
    path.with_file_name(name)
}

/// Serves one file, high or low quality.
#[process(group = "files")]
pub struct FileHandler {
    site: Arc<Site>,
    request: Option<(u64, Addr<HttpConnection>, PathBuf, Quality)>,
    tried_full_after_low: bool,
}

impl FileHandler {
    pub fn new(site: Arc<Site>) -> Self {
        FileHandler {
            site,
            request: None,
            tried_full_after_low: false,
        }
    }

    fn read(&self, path: PathBuf, ctx: &mut Ctx<Self>) {
        let reader = ctx.spawn(AsyncFile);
        let asked = reader.post(ReadFile {
            path,
            reply: ctx.myself().into(),
        });
        if asked.is_err() {
            if let Some((seq, conn, _, _)) = &self.request {
                respond(conn, *seq, Response::error(500));
            }
            ctx.complete();
        }
    }
}

#[process]
impl FileHandler {
    #[handle]
    fn request(&mut self, msg: FileRequest, ctx: &mut Ctx<Self>) {
        let full = self.site.root.join(&msg.path);
        let path = match msg.quality {
            Quality::High => full.clone(),
            Quality::Low => low_variant(&full),
        };
        work(self.site.work * u32::try_from(msg.quality.cost()).unwrap_or(1));
        self.request = Some((msg.seq, msg.conn, full, msg.quality));
        self.read(path, ctx);
    }

    #[handle]
    fn read_done(&mut self, FileRead { result }: FileRead, ctx: &mut Ctx<Self>) {
        let Some((seq, conn, full, quality)) = self.request.clone() else {
            return ctx.complete();
        };
        let response = match result {
            Ok(bytes) => Response::ok(content_type(&full), bytes).with_header(
                "X-Quality",
                if quality == Quality::High {
                    "high"
                } else {
                    "low"
                },
            ),
            // No low-quality variant: the full file it is.
            Err(FileError::NotFound) if quality == Quality::Low && !self.tried_full_after_low => {
                self.tried_full_after_low = true;
                return self.read(full, ctx);
            }
            Err(FileError::NotFound) => Response::not_found(),
            Err(FileError::TooLarge) => Response::error(413),
            Err(FileError::Io(_)) => Response::error(500),
        };
        respond(&conn, seq, response);
        ctx.complete();
    }
}

/// Reads a file with blocking I/O, in a group whose controller adds threads while reads
/// block.
#[process(group = "files-io")]
pub struct AsyncFile;

#[process]
impl AsyncFile {
    #[handle]
    fn read(&mut self, ReadFile { path, reply }: ReadFile, ctx: &mut Ctx<Self>) {
        let result = match std::fs::metadata(&path) {
            Ok(meta) if !meta.is_file() => Err(FileError::NotFound),
            Ok(meta) if meta.len() > MAX_FILE => Err(FileError::TooLarge),
            Ok(_) => std::fs::read(&path).map_err(|e| FileError::Io(e.to_string())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(FileError::NotFound),
            Err(e) => Err(FileError::Io(e.to_string())),
        };
        let _ = reply.post(FileRead { result });
        ctx.complete();
    }
}

/// Lists a page of resources through a `DbConnection`.
#[process(group = "resources")]
pub struct ListResources {
    site: Arc<Site>,
    answer: Option<(u64, Addr<HttpConnection>)>,
}

impl ListResources {
    pub fn new(site: Arc<Site>) -> Self {
        ListResources { site, answer: None }
    }
}

#[process]
impl ListResources {
    #[handle]
    fn request(&mut self, msg: ListRequest, ctx: &mut Ctx<Self>) {
        work(self.site.work * 2);
        self.answer = Some((msg.seq, msg.conn));
        let db = ctx.spawn(DbConnection {
            site: Arc::clone(&self.site),
        });
        let kind = QueryKind::List {
            offset: msg.offset,
            limit: msg.limit,
        };
        if db
            .post(Query {
                kind,
                reply: ctx.myself().into(),
            })
            .is_err()
        {
            ctx.complete();
        }
    }

    #[handle]
    fn rows(&mut self, Rows { json }: Rows, ctx: &mut Ctx<Self>) {
        if let Some((seq, conn)) = self.answer.take() {
            let body = json.unwrap_or_else(|| "[]".to_owned());
            respond(&conn, seq, Response::ok("application/json", body));
        }
        ctx.complete();
    }
}

/// Shows one resource through a `DbConnection`.
#[process(group = "resources")]
pub struct ShowResource {
    site: Arc<Site>,
    answer: Option<(u64, Addr<HttpConnection>)>,
}

impl ShowResource {
    pub fn new(site: Arc<Site>) -> Self {
        ShowResource { site, answer: None }
    }
}

#[process]
impl ShowResource {
    #[handle]
    fn request(&mut self, msg: ShowRequest, ctx: &mut Ctx<Self>) {
        work(self.site.work);
        self.answer = Some((msg.seq, msg.conn));
        let db = ctx.spawn(DbConnection {
            site: Arc::clone(&self.site),
        });
        let query = Query {
            kind: QueryKind::Show { id: msg.id },
            reply: ctx.myself().into(),
        };
        if db.post(query).is_err() {
            ctx.complete();
        }
    }

    #[handle]
    fn rows(&mut self, Rows { json }: Rows, ctx: &mut Ctx<Self>) {
        if let Some((seq, conn)) = self.answer.take() {
            let response = match json {
                Some(json) => Response::ok("application/json", json),
                None => Response::not_found(),
            };
            respond(&conn, seq, response);
        }
        ctx.complete();
    }
}

/// A connection to the resource store, one per query as in the paper.
#[process(group = "db")]
pub struct DbConnection {
    site: Arc<Site>,
}

#[process]
impl DbConnection {
    #[handle]
    fn query(&mut self, Query { kind, reply }: Query, ctx: &mut Ctx<Self>) {
        let json = match kind {
            QueryKind::List { offset, limit } => Some(self.site.store.list_json(offset, limit)),
            QueryKind::Show { id } => self.site.store.get(id).map(|r| r.to_json()),
        };
        let _ = reply.post(Rows { json });
        ctx.complete();
    }
}
