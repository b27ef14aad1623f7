//! `&'static T` of an immutable `T` is shared, never mutated: `&'static str`, `&'static [u8]`,
//! a reference to a `static` of a user type.
use whirl::prelude::*;

#[derive(Isolated)]
struct Config {
    name: &'static str,
    limit: u32,
}

static CONFIG: Config = Config {
    name: "edge",
    limit: 3,
};

#[derive(Message)]
struct Log {
    level: &'static str,
    bytes: &'static [u8],
    config: &'static Config,
}

#[process]
struct Logger {
    lines: u32,
}

#[process]
impl Logger {
    #[handle]
    fn log(&mut self, msg: Log) {
        assert_eq!(msg.config.name, "edge");
        assert!(self.lines < msg.config.limit);
        assert_eq!(msg.level.len() + msg.bytes.len(), 6);
        self.lines += 1;
    }
}

fn main() {
    let rt = Runtime::builder().threads(1).build().expect("the runtime starts");
    let logger = rt.spawn(Logger { lines: 0 });
    logger
        .post(Log {
            level: "warn",
            bytes: b"!!",
            config: &CONFIG,
        })
        .unwrap();
    rt.shutdown_graceful();
}
