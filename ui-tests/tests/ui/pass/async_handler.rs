//! `async fn` handlers, answering and not, with and without the context; a typed reply from a
//! sync handler; awaiting another process and sleeping inside one.
use std::time::Duration;

use whirl::prelude::*;

#[derive(Message)]
struct Fetch;

#[derive(Message)]
struct Count;

#[derive(Message)]
struct Touch;

#[process]
struct Fetcher {
    fetched: u64,
    source: Addr<Source>,
}

#[process]
impl Fetcher {
    #[handle]
    async fn fetch(&mut self, _: Fetch, ctx: &mut Ctx<Self>) -> Result<u64, Failure> {
        let n = self
            .source
            .ask(Count)
            .await
            .map_err(|e| Failure::new(e.to_string()))?;
        whirl::time::sleep(Duration::from_millis(1)).await;
        self.fetched += n;
        let _ = ctx.id();
        Ok(self.fetched)
    }

    #[handle]
    async fn touch(&mut self, _: Touch) {
        whirl::time::sleep(Duration::from_millis(1)).await;
    }
}

#[process]
struct Source {
    count: u64,
}

#[process]
impl Source {
    #[handle]
    fn count(&mut self, _: Count) -> u64 {
        self.count += 1;
        self.count
    }
}

fn main() {
    let rt = Runtime::new();
    let source = rt.spawn(Source { count: 0 });
    let fetcher = rt.spawn(Fetcher { fetched: 0, source });
    fetcher.post(Touch).unwrap();
    assert_eq!(fetcher.call(Fetch).unwrap(), 1);
    assert_eq!(fetcher.call(Fetch).unwrap(), 3);
    rt.shutdown_graceful();
}
