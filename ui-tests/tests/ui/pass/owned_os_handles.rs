//! Class 4: owned OS handles moved into a process are owned data.
use std::fs::File;
use std::io::BufReader;
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::process::ChildStdin;
use whirl::prelude::*;

#[process]
struct Files {
    log: Option<File>,
    reader: Option<BufReader<File>>,
    socket: Option<TcpStream>,
    listener: Option<TcpListener>,
    udp: Option<UdpSocket>,
    child: Option<ChildStdin>,
    #[cfg(unix)]
    unix: Option<std::os::unix::net::UnixStream>,
}

#[derive(Message)]
struct Adopt(File);

#[derive(Message, Debug)]
struct HasLog(ReplyTo<bool>);

#[process]
impl Files {
    #[handle]
    fn adopt(&mut self, Adopt(file): Adopt) {
        self.log = Some(file);
    }

    #[handle]
    fn has_log(&mut self, HasLog(reply): HasLog) {
        let _ = reply.send(self.log.is_some());
    }
}

fn main() {
    let rt = Runtime::builder().threads(1).build().expect("the runtime starts");
    let files = rt.spawn(Files {
        log: None,
        reader: None,
        socket: None,
        listener: TcpListener::bind("127.0.0.1:0").ok(),
        udp: None,
        child: None,
        #[cfg(unix)]
        unix: None,
    });
    let file = File::open("Cargo.toml").expect("the test crate has a manifest");
    files.post(Adopt(file)).unwrap();
    assert!(files.request_with(HasLog).call().unwrap());
    rt.shutdown_graceful();
}
