//! The TCP proxy that stands between the parent node and a child node (gates 2 and 4), and
//! cuts the link between them on demand.
//!
//! One thread accepts, and two threads per connection copy bytes, one per direction. A
//! partition refuses new connections and either closes the existing ones (`drop`: the peers
//! see FIN at once) or keeps them open and passes no byte (`blackhole`: the peers must rely on
//! the lease). Healing closes what the partition silenced and forwards again.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;

use parking_lot::Mutex;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum PartitionMode {
    /// Close both sockets of every proxied connection (peers see FIN at once).
    Drop,
    /// Keep the sockets open but pass no byte (peers must rely on the lease).
    Blackhole,
}

/// A TCP proxy, one thread per direction per connection, that can be partitioned and healed.
pub struct Proxy {
    pub port: u16,
    pub shared: Arc<ProxyShared>,
}

pub struct ProxyShared {
    upstream: u16,
    partitioned: AtomicBool,
    stopped: AtomicBool,
    connections: Mutex<Vec<(TcpStream, TcpStream)>>,
    /// Connections forwarded so far.
    pub forwarded: AtomicU64,
    /// Connections refused while partitioned.
    pub refused: AtomicU64,
}

impl Proxy {
    pub fn start(upstream: u16) -> Result<Proxy, String> {
        let listener =
            TcpListener::bind("127.0.0.1:0").map_err(|e| format!("proxy cannot bind: {e}"))?;
        let port = listener
            .local_addr()
            .map_err(|e| format!("proxy address: {e}"))?
            .port();
        let shared = Arc::new(ProxyShared {
            upstream,
            partitioned: AtomicBool::new(false),
            stopped: AtomicBool::new(false),
            connections: Mutex::new(Vec::new()),
            forwarded: AtomicU64::new(0),
            refused: AtomicU64::new(0),
        });
        let accept_shared = Arc::clone(&shared);
        thread::spawn(move || {
            for stream in listener.incoming() {
                if accept_shared.stopped.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(downstream) = stream else { continue };
                accept_shared.accept(downstream);
            }
        });
        Ok(Proxy { port, shared })
    }

    /// Cuts the link: no new connection is forwarded, and existing ones are closed (`Drop`) or
    /// silenced (`Blackhole`).
    pub fn partition(&self, mode: PartitionMode) {
        self.shared.partitioned.store(true, Ordering::SeqCst);
        if mode == PartitionMode::Drop {
            self.shared.close_all();
        }
    }

    /// Forwards again. Connections silenced by a blackhole are closed first: the peers have
    /// given up on them and will connect anew.
    pub fn heal(&self) {
        self.shared.close_all();
        self.shared.partitioned.store(false, Ordering::SeqCst);
    }

    pub fn stop(&self) {
        self.shared.stopped.store(true, Ordering::SeqCst);
        self.shared.close_all();
        // Wake the accept loop.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

impl ProxyShared {
    fn accept(self: &Arc<Self>, downstream: TcpStream) {
        if self.partitioned.load(Ordering::SeqCst) {
            self.refused.fetch_add(1, Ordering::SeqCst);
            let _ = downstream.shutdown(Shutdown::Both);
            return;
        }
        let Ok(upstream) = TcpStream::connect(("127.0.0.1", self.upstream)) else {
            let _ = downstream.shutdown(Shutdown::Both);
            return;
        };
        let _ = downstream.set_nodelay(true);
        let _ = upstream.set_nodelay(true);
        let (Ok(d2), Ok(u2), Ok(d3), Ok(u3)) = (
            downstream.try_clone(),
            upstream.try_clone(),
            downstream.try_clone(),
            upstream.try_clone(),
        ) else {
            return;
        };
        self.connections.lock().push((d3, u3));
        self.forwarded.fetch_add(1, Ordering::SeqCst);
        let a = Arc::clone(self);
        thread::spawn(move || a.pump(downstream, u2));
        let b = Arc::clone(self);
        thread::spawn(move || b.pump(upstream, d2));
    }

    /// Copies `from` to `to` while not partitioned; while partitioned, reads and discards.
    fn pump(&self, mut from: TcpStream, mut to: TcpStream) {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            if self.partitioned.load(Ordering::SeqCst) {
                continue;
            }
            if to.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        // A close passes through only while the link is up: a partition hides it.
        if !self.partitioned.load(Ordering::SeqCst) {
            let _ = to.shutdown(Shutdown::Both);
        }
    }

    fn close_all(&self) {
        for (down, up) in self.connections.lock().drain(..) {
            let _ = down.shutdown(Shutdown::Both);
            let _ = up.shutdown(Shutdown::Both);
        }
    }
}
