//! An owned `std::io::Error` and a thread's `JoinHandle` cross process boundaries: the error
//! owns its payload, the handle is the only way to the thread's result.
use std::io;
use std::thread::JoinHandle;
use whirl::prelude::*;

#[derive(Message)]
struct Failed {
    error: io::Error,
}

#[derive(Message)]
struct Open {
    path: String,
}

#[derive(Message)]
struct Join;

#[process]
struct Loader {
    job: Option<JoinHandle<u64>>,
    errors: Vec<io::Error>,
}

#[process]
impl Loader {
    #[handle]
    fn failed(&mut self, msg: Failed) {
        self.errors.push(msg.error);
    }

    /// Answers with the `Result` itself: the open error goes back to the caller.
    #[handle]
    fn open(&mut self, msg: Open) -> Result<Result<u64, io::Error>, Failure> {
        Ok(std::fs::metadata(&msg.path).map(|m| m.len()))
    }

    #[handle]
    fn join(&mut self, _: Join) -> Result<u64, Failure> {
        let job = self.job.take().ok_or_else(|| Failure::new("no job"))?;
        job.join().map_err(|_| Failure::new("the job panicked"))
    }
}

fn main() {
    let rt = Runtime::new();
    let loader = rt.spawn(Loader {
        job: Some(std::thread::spawn(|| 7)),
        errors: Vec::new(),
    });
    loader
        .post(Failed {
            error: io::Error::other("disk"),
        })
        .unwrap();
    let missing = loader
        .call(Open {
            path: "/no/such/file".into(),
        })
        .unwrap();
    assert_eq!(missing.unwrap_err().kind(), io::ErrorKind::NotFound);
    assert_eq!(loader.call(Join).unwrap(), 7);
    rt.shutdown_graceful();
}
