//! `async fn` `#[started]` hooks, with and without the context, returning `()` or a `Result`:
//! the hook awaits another process and a timer, and runs to completion before the first
//! message is handled.
use std::time::Duration;

use whirl::prelude::*;

#[derive(Message)]
struct Count;

#[derive(Message)]
struct Loaded;

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

#[process]
struct Loader {
    source: Addr<Source>,
    loaded: Option<u64>,
}

#[process]
impl Loader {
    #[started]
    async fn load(&mut self, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        let n = self
            .source
            .ask(Count)
            .await
            .map_err(|e| Failure::new(e.to_string()))?;
        whirl::time::sleep(Duration::from_millis(1)).await;
        self.loaded = Some(n);
        let _ = ctx.id();
        Ok(())
    }

    #[handle]
    fn loaded(&mut self, _: Loaded) -> Option<u64> {
        self.loaded
    }
}

#[process]
struct Napper {
    napped: bool,
}

#[process]
impl Napper {
    #[started]
    async fn nap(&mut self) {
        whirl::time::sleep(Duration::from_millis(1)).await;
        self.napped = true;
    }

    #[handle]
    fn napped(&mut self, _: Loaded) -> bool {
        self.napped
    }
}

fn main() {
    let rt = Runtime::new();
    let source = rt.spawn(Source { count: 0 });
    let loader = rt.spawn(Loader {
        source,
        loaded: None,
    });
    // Posted at once: handled only after the hook completed.
    assert_eq!(loader.call(Loaded).unwrap(), Some(1));
    let napper = rt.spawn(Napper { napped: false });
    assert!(napper.call(Loaded).unwrap());
    rt.shutdown_graceful();
}
