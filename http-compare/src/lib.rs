//! What the two comparison servers share: their command line, `PORT DIR`.
//!
//! Each server serves the files of `DIR` under `/files/` on `127.0.0.1:PORT`, on 2 worker
//! threads, with `TCP_NODELAY` set on every accepted socket (as nginx does with
//! `tcp_nodelay on`, and iris_http does; without it a keep-alive client waits for delayed
//! ACKs between a response's head and body).

use std::net::SocketAddr;
use std::path::PathBuf;

/// Worker threads of each server (nginx runs 2 worker processes in the comparison).
pub const WORKERS: usize = 2;

/// The address and the directory to serve, from `PORT DIR`.
pub fn args() -> Result<(SocketAddr, PathBuf), String> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: SERVER PORT DIR";
    let port: u16 = args
        .next()
        .ok_or(usage)?
        .parse()
        .map_err(|e| format!("PORT: {e}"))?;
    let dir = PathBuf::from(args.next().ok_or(usage)?);
    if !dir.is_dir() {
        return Err(format!("{}: not a directory", dir.display()));
    }
    Ok((SocketAddr::from(([127, 0, 0, 1], port)), dir))
}
