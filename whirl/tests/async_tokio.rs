//! With the `tokio` feature, an `async` handler awaits tokio's own futures (sockets, timers)
//! on whirl's workers: the runtime's tokio threads drive the I/O, whirl runs the handler.
#![cfg(feature = "tokio")]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use whirl::prelude::*;

#[derive(Message)]
struct Fetch(SocketAddr);

#[process]
struct Client {
    fetched: usize,
}

#[process]
impl Client {
    /// Sends a line to `addr` over a tokio socket and returns the echo, after a tokio sleep.
    #[handle]
    async fn fetch(&mut self, Fetch(addr): Fetch) -> Result<String, Failure> {
        let mut stream = tokio::net::TcpStream::connect(addr).await?;
        stream.write_all(b"ping\n").await?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await?;
        tokio::time::sleep(Duration::from_millis(2)).await;
        self.fetched += 1;
        Ok(format!("{answer} #{}", self.fetched))
    }
}

/// Echoes one read per connection, then closes it.
fn echo_server(connections: usize) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("address");
    std::thread::spawn(move || {
        for stream in listener.incoming().take(connections) {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 64];
            if let Ok(n) = stream.read(&mut buf) {
                let _ = stream.write_all(&buf[..n]);
            }
        }
    });
    addr
}

#[test]
fn an_async_handler_awaits_tokio_sockets_and_timers() {
    let server = echo_server(20);
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let clients: Vec<_> = (0..10).map(|_| rt.spawn(Client { fetched: 0 })).collect();
    for round in 1..=2 {
        for client in &clients {
            let answer = client
                .request(Fetch(server))
                .timeout(Duration::from_secs(30))
                .call()
                .expect("the client answers");
            assert_eq!(answer, format!("ping\n #{round}"));
        }
    }
    assert!(rt.tokio_handle().is_some());
    let report = rt.shutdown_graceful();
    assert!(report.is_clean(), "{report}");
}

#[test]
fn the_owned_tokio_runtime_stops_with_the_whirl_runtime_even_inside_tokio() {
    // Dropping a tokio runtime inside another one's context would panic; the shutdown must not.
    let outer = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("tokio");
    outer.block_on(async {
        let rt = Runtime::new();
        let client = rt.spawn(Client { fetched: 0 });
        let server = echo_server(1);
        let answer = client.ask(Fetch(server)).await.expect("answer");
        assert_eq!(answer, "ping\n #1");
        drop(rt);
    });
}
