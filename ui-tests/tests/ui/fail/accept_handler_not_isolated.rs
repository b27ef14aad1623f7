//! Class 3: an `Accept` implementation is process state of the acceptor: it must be `Isolated`.
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::net::TcpStream;
use whirl::net::{Accept, AcceptError, Acceptor};
use whirl::prelude::*;

struct Log {
    peers: Arc<Mutex<Vec<SocketAddr>>>,
}

impl Accept for Log {
    fn accept(
        &mut self,
        _stream: TcpStream,
        peer: SocketAddr,
        _ctx: &mut Ctx<Acceptor>,
    ) -> Result<(), AcceptError> {
        self.peers.lock().unwrap().push(peer);
        Ok(())
    }
}

fn main() {}
