//! A `Display` impl run by a third-party crate's generic code: `itertools::join` formats each
//! item, and so calls the user's `fmt` back.
// expect: LABELS_RENDERED
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use whirl::prelude::*;

static LABELS_RENDERED: AtomicU64 = AtomicU64::new(0);

#[derive(Isolated)]
struct Label(String);

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        LABELS_RENDERED.fetch_add(1, Ordering::Relaxed); //~ LABELS_RENDERED
        write!(f, "[{}]", self.0)
    }
}

#[derive(Message)]
struct Tag(String);

#[process]
struct Tagger {
    labels: Vec<Label>,
    line: String,
}

#[process]
impl Tagger {
    #[handle]
    fn tag(&mut self, Tag(name): Tag) {
        self.labels.push(Label(name));
        self.line = itertools::join(&self.labels, ", ");
    }
}

fn main() {
    let rt = Runtime::new();
    let tagger = Tagger {
        labels: Vec::new(),
        line: String::new(),
    };
    let _ = rt.spawn(tagger).post(Tag("urgent".into()));
    rt.shutdown_graceful();
}
