//! The request handlers (one process per session and kind of request, started by the session's
//! dispatcher at its first request of that kind and carrying the session's principal; it
//! serves the session's requests one after the other and ends when the dispatcher retires)
//! and the processes they create: `AsyncFile` for blocking file reads (with `--file-io-process`;
//! by default the file handler opens its file itself), `DbConnection` for the resource store.
//!
//! Files are answered as static file servers do: with `ETag`, `Last-Modified` and
//! `Accept-Ranges`, 304 to a client whose copy is current, 206 for one byte range, 416 for a
//! range past the end, the `index.html` of a directory named with a trailing slash and a 301
//! to that form for one named without. `AsyncFile` decides from the open file's metadata
//! and reads only what it sends: nothing for a 304 or 416, the range alone for a 206. A body
//! of [`SENDFILE_MIN`] bytes or more is not read at all: the open file travels to the
//! connection's socket process, which sends the region with `sendfile(2)`.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use whirl::prelude::*;
use whirl_http::{Conditions, Response, Selection, Validators};

use super::messages::{
    FileBody, FileContent, FileError, FileRead, FileRegion, FileRequest, FileRequestIo,
    ListRequest, Quality, Query, QueryKind, ReadFile, Respond, RespondFile, Retire, ShowRequest,
};
use super::site::Site;

/// Largest response body read from a file, bytes: a whole file larger than this is refused
/// (413), a range of it within this is served.
const MAX_FILE: u64 = 8 * 1024 * 1024;

/// Bodies from this many bytes up are sent from the open file by the socket process
/// (`sendfile(2)`), not read into memory; smaller ones are read, and written with their
/// head in one buffer (one `write` instead of a `write` and a `sendfile`).
pub const SENDFILE_MIN: u64 = 64 * 1024;

/// Spends `d` on the CPU: the simulated cost of the work a real handler does (rendering,
/// resizing images), so that capacity is something the demo and the tests control.
fn work(d: Duration) {
    let end = Instant::now() + d;
    while Instant::now() < end {
        std::hint::spin_loop();
    }
}

/// The process in `slot` if it is still alive, else a new one from `spawn`, kept in `slot`.
pub fn live_or_spawn<Q: Process>(
    slot: &mut Option<Addr<Q>>,
    spawn: impl FnOnce() -> Addr<Q>,
) -> Addr<Q> {
    match slot {
        Some(live) if !live.is_terminated() => live.clone(),
        _ => slot.insert(spawn()).clone(),
    }
}

fn respond(conn: &Recipient<Respond>, seq: u64, response: Response) {
    let _ = conn.post(Respond { seq, response });
}

/// The media type for a file name (mime_guess's table, by extension); text is declared
/// UTF-8, which is what the site's files are written in.
fn content_type(path: &Path) -> Cow<'static, str> {
    // The guess's own constant: no allocation but for the charset added to text.
    let essence = mime_guess::from_path(path)
        .first_raw()
        .unwrap_or("application/octet-stream");
    match essence.starts_with("text/") && !essence.contains("charset") {
        true => Cow::Owned(format!("{essence}; charset=utf-8")),
        false => Cow::Borrowed(essence),
    }
}

/// The answer for `body`, a file found at `full` (its high-quality path, which names the
/// type) in `quality`; with the file region to send as its body, if it is not in memory.
fn file_response(full: &Path, quality: Quality, body: FileBody) -> (Response, Option<FileRegion>) {
    let FileBody {
        validators,
        content,
    } = body;
    let (response, region) = match content {
        FileContent::PreconditionFailed => return (Response::error(412), None),
        FileContent::Unsatisfiable { total } => {
            let response = Response::error(416)
                .with_header("Content-Range", format!("bytes */{total}"))
                .with_header("Accept-Ranges", "bytes");
            return (response, None);
        }
        FileContent::NotModified => (Response::new(304), None),
        FileContent::Full(bytes) => (Response::ok(content_type(full), bytes), None),
        FileContent::Region { region, partial } => {
            let response = match partial {
                None => Response::new(200).with_header("Content-Type", content_type(full)),
                Some((range, total)) => Response::new(206)
                    .with_header("Content-Type", content_type(full))
                    .with_header("Content-Range", range.content_range(total)),
            };
            (response, Some(region))
        }
        FileContent::Partial {
            range,
            total,
            bytes,
        } => {
            let response = Response {
                body: bytes,
                ..Response::new(206)
            }
            .with_header("Content-Type", content_type(full))
            .with_header("Content-Range", range.content_range(total));
            (response, None)
        }
    };
    // RFC 9110 §15.4.5: a 304 carries the validators a 200 would have.
    let last_modified = validators.last_modified_header();
    let mut response = response.with_header("ETag", validators.etag);
    if let Some(date) = last_modified {
        response = response.with_header("Last-Modified", date);
    }
    if response.status != 304 {
        let quality = match quality {
            Quality::High => "high",
            Quality::Low => "low",
        };
        response = response
            .with_header("Accept-Ranges", "bytes")
            .with_header("X-Quality", quality);
    }
    (response, region)
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

/// Serves a session's files, high or low quality, one request at a time. By default it
/// opens and reads each file itself ([`FileRequest`]); with `--file-io-process` each read is
/// an `AsyncFile` process's ([`FileRequestIo`]), which its handler awaits, taking no other
/// message meanwhile: the session's next requests wait in its mailbox, where the group counts
/// them and times them.
#[process(group = "files")]
pub struct FileHandler {
    site: Arc<Site>,
}

impl FileHandler {
    pub fn new(site: Arc<Site>) -> Self {
        FileHandler { site }
    }

    /// Spends the request's simulated work; the path of the full file.
    fn begin(&self, msg: &FileRequest) -> PathBuf {
        work(self.site.work * u32::try_from(msg.quality.cost()).unwrap_or(1));
        self.site.root.join(&msg.path)
    }
}

/// The path of the variant asked for: the full file's own for high quality (no copy).
fn variant(full: &Path, quality: Quality) -> Cow<'_, Path> {
    match quality {
        Quality::High => Cow::Borrowed(full),
        Quality::Low => Cow::Owned(low_variant(full)),
    }
}

#[process]
impl FileHandler {
    #[handle]
    fn request(&mut self, msg: FileRequest) {
        let full = self.begin(&msg);
        let mut result = read_selected(&variant(&full, msg.quality), &msg.conditions);
        if needs_full_file(&msg, &result) {
            result = read_selected(&full, &msg.conditions);
        }
        answer(&msg, &full, result);
    }

    #[handle]
    async fn request_io(&mut self, FileRequestIo(msg): FileRequestIo, ctx: &mut Ctx<Self>) {
        let full = self.begin(&msg);
        let path = variant(&full, msg.quality).into_owned();
        let mut result = read_through_process(path, &msg.conditions, ctx).await;
        if needs_full_file(&msg, &result) {
            result = read_through_process(full.clone(), &msg.conditions, ctx).await;
        }
        answer(&msg, &full, result);
    }

    /// Sent by the dispatcher as it ends, after its last request.
    #[handle]
    fn retire(&mut self, _: Retire, ctx: &mut Ctx<Self>) {
        ctx.complete();
    }
}

/// Whether a low-quality request found no low-quality variant (or a directory by that name):
/// the full file it is.
fn needs_full_file(msg: &FileRequest, result: &Result<FileBody, FileError>) -> bool {
    msg.quality == Quality::Low && matches!(result, Err(FileError::NotFound | FileError::Directory))
}

/// Reads what `conditions` select of `path` in an `AsyncFile` process of its own.
async fn read_through_process(
    path: PathBuf,
    conditions: &Conditions,
    ctx: &mut Ctx<FileHandler>,
) -> Result<FileBody, FileError> {
    let reader = ctx.spawn(AsyncFile);
    let read = ReadFile {
        path,
        conditions: conditions.clone(),
    };
    match reader.ask(read).await {
        Ok(FileRead { result }) => result,
        Err(e) => Err(FileError::Io(format!(
            "the file reader did not answer: {e}"
        ))),
    }
}

/// Answers `msg` with what was read of the file (`full` is its full-quality path).
fn answer(msg: &FileRequest, full: &Path, result: Result<FileBody, FileError>) {
    let response = match result {
        Ok(body) => match file_response(full, msg.quality, body) {
            (response, None) => response,
            (response, Some(region)) => {
                let _ = msg.conn_file.post(RespondFile {
                    seq: msg.seq,
                    response,
                    region,
                });
                return;
            }
        },
        Err(FileError::Directory) => match &msg.directory_location {
            Some(location) => Response::error(301).with_header("Location", location.clone()),
            // The target named a directory, and its `index.html` is one too.
            None => Response::not_found(),
        },
        Err(FileError::NotFound) => Response::not_found(),
        Err(FileError::TooLarge) => Response::error(413),
        Err(FileError::Io(_)) => Response::error(500),
    };
    respond(&msg.conn, msg.seq, response);
}

/// Reads a file with blocking I/O, in a group whose controller adds threads while reads
/// block (with `--file-io-process`; by default the file handler opens the file itself, see
/// `Site::file_io_process`).
#[process(group = "files-io")]
pub struct AsyncFile;

/// What `conditions` select of the file at `path`, read from one open handle so that the
/// validators describe the bytes sent even if the path is replaced meanwhile.
fn read_selected(path: &Path, conditions: &Conditions) -> Result<FileBody, FileError> {
    let io_error = |e: io::Error| match e.kind() {
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory => FileError::NotFound,
        _ => FileError::Io(e.to_string()),
    };
    let mut file = File::open(path).map_err(io_error)?;
    let meta = file.metadata().map_err(io_error)?;
    if meta.is_dir() {
        return Err(FileError::Directory);
    }
    if !meta.is_file() {
        return Err(FileError::NotFound);
    }
    let total = meta.len();
    let validators = Validators::new(total, meta.modified().ok());
    let content = match conditions.select(&validators, total) {
        Selection::PreconditionFailed => FileContent::PreconditionFailed,
        Selection::NotModified => FileContent::NotModified,
        Selection::Unsatisfiable => FileContent::Unsatisfiable { total },
        Selection::Full if total > MAX_FILE => return Err(FileError::TooLarge),
        Selection::Full if total >= SENDFILE_MIN => FileContent::Region {
            region: FileRegion {
                file,
                offset: 0,
                len: total,
            },
            partial: None,
        },
        Selection::Full => FileContent::Full(read_exactly(&mut file, total).map_err(io_error)?),
        Selection::Partial(range) => {
            if range.len() > MAX_FILE {
                return Err(FileError::TooLarge);
            }
            if range.len() >= SENDFILE_MIN {
                let region = FileRegion {
                    file,
                    offset: range.first,
                    len: range.len(),
                };
                return Ok(FileBody {
                    validators,
                    content: FileContent::Region {
                        region,
                        partial: Some((range, total)),
                    },
                });
            }
            file.seek(SeekFrom::Start(range.first)).map_err(io_error)?;
            let bytes = read_exactly(&mut file, range.len()).map_err(io_error)?;
            FileContent::Partial {
                range,
                total,
                bytes,
            }
        }
        // An answer whirl-http added after this server was written (`Selection` is
        // non-exhaustive): refused rather than guessed at.
        _ => return Err(FileError::Io("unsupported selection".into())),
    };
    Ok(FileBody {
        validators,
        content,
    })
}

/// `len` bytes from `file`'s position, never more than [`MAX_FILE`]; an error if the file
/// ends sooner (it shrank since its length was read, and the headers would lie).
fn read_exactly(file: &mut File, len: u64) -> io::Result<Vec<u8>> {
    if len > MAX_FILE {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "longer than MAX_FILE",
        ));
    }
    // `len <= MAX_FILE`, which fits in a usize on every platform the server runs on.
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(len).read_to_end(&mut bytes)?;
    if u64::try_from(bytes.len()).ok() != Some(len) {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the file shrank while it was read",
        ));
    }
    Ok(bytes)
}

#[process]
impl AsyncFile {
    #[handle]
    fn read(&mut self, ReadFile { path, conditions }: ReadFile, ctx: &mut Ctx<Self>) -> FileRead {
        ctx.complete();
        FileRead {
            result: read_selected(&path, &conditions),
        }
    }
}

/// A session's resource requests (a page of the list, or one resource), answered one after
/// the other through the handler's own `DbConnection`, which it opens at its first request and
/// closes as it ends. Started by the session's dispatcher, it ends after its last request once
/// the dispatcher retires.
///
/// Its handlers await the store's answer, and the process takes no other message meanwhile:
/// the session's next requests wait in its mailbox, where the group counts them and measures
/// their response time (its admission predicate sheds on both).
#[process(group = "resources")]
pub struct ResourceHandler {
    site: Arc<Site>,
    db: Option<Addr<DbConnection>>,
}

impl ResourceHandler {
    pub fn new(site: Arc<Site>) -> Self {
        ResourceHandler { site, db: None }
    }

    /// The handler's connection to the store, opened now if it has none (or it ended).
    fn db(&mut self, ctx: &mut Ctx<Self>) -> Addr<DbConnection> {
        let site = &self.site;
        live_or_spawn(&mut self.db, || {
            ctx.spawn(DbConnection {
                site: Arc::clone(site),
            })
        })
    }
}

#[process]
impl ResourceHandler {
    #[handle]
    async fn list(&mut self, msg: ListRequest, ctx: &mut Ctx<Self>) {
        work(self.site.work * 2);
        let kind = QueryKind::List {
            offset: msg.offset,
            limit: msg.limit,
        };
        let response = match self.db(ctx).ask(Query { kind }).await {
            Ok(rows) => Response::ok("application/json", rows.unwrap_or_else(|| "[]".into())),
            Err(_) => Response::error(500),
        };
        respond(&msg.conn, msg.seq, response);
    }

    #[handle]
    async fn show(&mut self, msg: ShowRequest, ctx: &mut Ctx<Self>) {
        work(self.site.work);
        let kind = QueryKind::Show { id: msg.id };
        let response = match self.db(ctx).ask(Query { kind }).await {
            Ok(Some(json)) => Response::ok("application/json", json),
            Ok(None) => Response::not_found(),
            Err(_) => Response::error(500),
        };
        respond(&msg.conn, msg.seq, response);
    }

    /// Sent by the dispatcher as it ends, after its last request.
    #[handle]
    fn retire(&mut self, _: Retire, ctx: &mut Ctx<Self>) {
        ctx.complete();
    }

    /// Its connection to the store closes with it.
    #[terminated]
    fn ended(&mut self, _: &ExitReason) {
        if let Some(db) = self.db.take() {
            db.exit(ExitReason::Normal);
        }
    }
}

/// A connection to the resource store: one per resource handler, kept for the session's
/// queries (the paper opens one per query).
#[process(group = "db")]
pub struct DbConnection {
    site: Arc<Site>,
}

#[process]
impl DbConnection {
    #[handle]
    fn query(&mut self, Query { kind }: Query) -> Option<String> {
        match kind {
            QueryKind::List { offset, limit } => Some(self.site.store.list_json(offset, limit)),
            QueryKind::Show { id } => self.site.store.get(id).map(|r| r.to_json()),
        }
    }
}
