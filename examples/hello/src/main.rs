//! whirl in one screen: a process with two handlers, started by a supervisor; `post`, `call`,
//! and `ask` from another process's async handler; a crash, and the restart.
use whirl::prelude::*;

#[derive(Message)]
struct Hit(&'static str); // posted: counted, never answered

#[derive(Message)]
struct Hits; // answered with the count

#[process]
#[derive(Clone)]
struct Counter {
    hits: u64,
}

#[process]
impl Counter {
    #[handle]
    fn hit(&mut self, Hit(path): Hit) -> Result<(), Failure> {
        if path == "/crash" {
            return Err(Failure::new("asked to crash")); // fails this process, nothing else
        }
        self.hits += 1;
        println!("counter: {path}, {} hits", self.hits);
        Ok(())
    }

    #[handle]
    fn hits(&mut self, _: Hits) -> u64 {
        self.hits // the return value is the answer
    }
}

#[derive(Message)]
struct Report(Addr<Counter>);

#[process]
struct Reporter;

#[process]
impl Reporter {
    #[handle]
    async fn report(&mut self, Report(counter): Report) -> Result<u64, Failure> {
        Ok(counter.ask(Hits).await?) // the worker runs other processes while this waits
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rt = Runtime::new();
    let child = ChildSpec::worker("counter", Counter { hits: 0 }).named("counter");
    let sup = rt.spawn(Supervisor::new(SupervisorSpec::new("root").child(child)));
    rt.block_until_idle(); // the supervisor has started its child
    let counter = rt.whereis::<Counter>("counter").ok_or("not started")?;
    counter.post(Hit("/"))?; // never blocks
    counter.post(Hit("/about"))?;
    println!("call: {} hits", counter.call(Hits)?); // blocks this thread for the answer
    let reporter = rt.spawn(Reporter);
    println!("ask: {} hits", reporter.call(Report(counter.clone()))?);

    counter.post(Hit("/crash"))?; // the supervisor restarts it from its initial state
    rt.block_until_idle();
    let counter = rt.whereis::<Counter>("counter").ok_or("not restarted")?;
    let (restarts, hits) = (sup.count_children()?.restarts, counter.call(Hits)?);
    println!("restarted ({restarts}), a fresh state: {hits} hits");
    rt.shutdown_graceful();
    Ok(())
}
