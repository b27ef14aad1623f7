//! Who polls for readiness: on a runtime with shared workers, the workers themselves. There is
//! no poller thread; a worker about to sleep waits in the poll, and busy workers look at it
//! between turns, so sockets are served even while every worker is kept busy.
//!
//! One test per binary: it lists the process's threads.
#![cfg(all(feature = "net", target_os = "linux"))]

mod common;

use common::echo::Echo;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use common::{assert_isolated, counter, flag};
use whirl_runtime::net::{AcceptError, Acceptor, SocketConnection};
use whirl_runtime::request::Sender as _;
use whirl_runtime::{Ctx, Failure, Handles, Isolated, Message, Process, Runtime, SharedClient};

/// The names of this process's threads.
fn thread_names() -> Vec<String> {
    let mut names = Vec::new();
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        for task in tasks.flatten() {
            if let Ok(name) = std::fs::read_to_string(task.path().join("comm")) {
                names.push(name.trim().to_owned());
            }
        }
    }
    names
}

/// Keeps a worker busy: every message it handles posts it another, until told to stop.
struct Spinner {
    spins: SharedClient<Arc<AtomicU64>>,
    stop: SharedClient<Arc<AtomicBool>>,
}

struct Spin;
// SAFETY: no data.
unsafe impl Isolated for Spin {}
impl Message for Spin {}

const _: () = {
    // Never called: naming the instances makes the compiler check each field's type.
    let _ = assert_isolated::<SharedClient<Arc<AtomicU64>>>;
    let _ = assert_isolated::<SharedClient<Arc<AtomicBool>>>;
};

// SAFETY: every field is `Isolated` (asserted above): a counter and a flag shared with the
// test thread, held as `SharedClient`s (test instruments, see `common`).
unsafe impl Process for Spinner {
    type Message = Spin;

    fn handle(&mut self, _: Spin, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        self.spins.fetch_add(1, SeqCst);
        // A little work per message, so that a turn is not free.
        std::thread::sleep(Duration::from_micros(20));
        if !self.stop.load(SeqCst) {
            let _ = ctx.myself().post(Spin);
        }
        Ok(())
    }
}

impl Handles<Spin> for Spinner {
    fn into_message(msg: Spin) -> Spin {
        msg
    }
}

fn echo(stream: TcpStream, _: SocketAddr, ctx: &mut Ctx<Acceptor>) -> Result<(), AcceptError> {
    let socket = ctx.spawn(SocketConnection::new(stream, ctx.net()?)?);
    ctx.spawn(Echo { socket });
    Ok(())
}

fn round_trips(client: &mut TcpStream, n: usize) {
    for i in 0..n {
        let ping = (i as u32).to_be_bytes();
        client.write_all(&ping).unwrap();
        let mut reply = [0; 4];
        client.read_exact(&mut reply).unwrap();
        assert_eq!(reply, ping);
    }
}

#[test]
fn the_shared_workers_poll_for_readiness_idle_or_busy() {
    let rt = Runtime::builder().threads(2).build().unwrap();
    // The sockets' processes run on a thread of their own, so the shared workers have nothing
    // to run; and they are asleep before the poll exists: its start wakes them to sleep in
    // it.
    let own = rt.group("own").threads(1).build().unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let (acceptor, addr) =
        Acceptor::bind_fn("127.0.0.1:0".parse().unwrap(), rt.net().unwrap(), echo).unwrap();
    rt.spawner().group(&own).spawn(acceptor);
    let mut client = TcpStream::connect(addr).unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();

    // Idle: a sleeping worker waits in the poll.
    round_trips(&mut client, 100);
    let names = thread_names();
    assert!(
        !names.iter().any(|n| n == "whirl-poller"),
        "no poller thread: {names:?}"
    );
    assert!(
        names.iter().any(|n| n.starts_with("whirl-worker")),
        "{names:?}"
    );

    // Busy: two spinners keep both workers from ever sleeping; they look at the poll between
    // turns.
    let spins = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let spinners: Vec<_> = (0..2)
        .map(|_| {
            let spinner = rt.spawn(Spinner {
                spins: counter(&spins),
                stop: flag(&stop),
            });
            spinner.post(Spin).unwrap();
            spinner
        })
        .collect();
    let before = spins.load(SeqCst);
    round_trips(&mut client, 100);
    let during = spins.load(SeqCst) - before;
    stop.store(true, SeqCst);
    assert!(during > 100, "the spinners ran meanwhile ({during} spins)");
    drop(spinners);
    rt.shutdown_graceful();
}
