//! A trait object made in `main` and handed to the process inside a `SharedClient`: the
//! handler's call goes through the vtable, so every impl of the trait in the workspace is
//! walked.
// expect: RENDERS
use std::sync::atomic::{AtomicU64, Ordering};
use whirl::prelude::*;
use whirl::SharedClient;

static RENDERS: AtomicU64 = AtomicU64::new(0);

trait Render {
    fn render(&self) -> usize;
}

struct Page;
impl Render for Page {
    fn render(&self) -> usize {
        RENDERS.fetch_add(1, Ordering::Relaxed) as usize //~ RENDERS
    }
}

#[derive(Message)]
struct Show;

#[process]
struct View {
    renderer: SharedClient<Box<dyn Render + Send + Sync>>,
}

#[process]
impl View {
    #[handle]
    fn show(&mut self, _s: Show) {
        let _ = self.renderer.render();
    }
}

fn main() {
    let renderer: Box<dyn Render + Send + Sync> = Box::new(Page);
    let view = View {
        renderer: SharedClient::new(renderer, "a renderer built for sharing"),
    };
    let rt = Runtime::new();
    let _ = rt.spawn(view).post(Show);
    rt.shutdown_graceful();
}
