//! A value made into a `dyn Trait` in a handler: its methods may run through the vtable, so
//! they are walked.
// expect: RENDERS
use std::sync::atomic::{AtomicU64, Ordering};
use whirl::prelude::*;

static RENDERS: AtomicU64 = AtomicU64::new(0);

trait Render {
    fn render(&self) -> String;
}

struct Page;
impl Render for Page {
    fn render(&self) -> String {
        RENDERS.fetch_add(1, Ordering::Relaxed); //~ RENDERS
        String::from("<p>")
    }
}

fn render_all(items: &[Box<dyn Render>]) -> usize {
    items.iter().map(|item| item.render().len()).sum()
}

#[derive(Message)]
struct Show;

#[process]
struct View;

#[process]
impl View {
    #[handle]
    fn show(&mut self, _s: Show) {
        let items: Vec<Box<dyn Render>> = vec![Box::new(Page)];
        let _ = render_all(&items);
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(View).post(Show);
    rt.shutdown_graceful();
}
