//! A table of `fn`s built in another crate of the workspace (a `static` of the helpers crate,
//! and the `Vec` its function returns), called through by a handler here: the entries are
//! functions whose address only the other crate takes.
// expect: AUDITED_FORMATS, PARSED
use corpus_helpers::{parsers, FORMATS};
use whirl::prelude::*;

#[derive(Message)]
struct Show(usize, u64);

#[derive(Message)]
struct Parse(usize, String);

#[process]
struct Printer {
    parsers: Vec<fn(&str) -> u64>,
    out: Vec<String>,
}

#[process]
impl Printer {
    #[handle]
    fn show(&mut self, Show(format, n): Show) {
        if let Some(format) = FORMATS.get(format) {
            self.out.push(format(n));
        }
    }

    #[handle]
    fn parse(&mut self, Parse(parser, text): Parse) {
        if let Some(parse) = self.parsers.get(parser) {
            self.out.push(parse(&text).to_string());
        }
    }
}

fn main() {
    let rt = Runtime::new();
    let printer = rt.spawn(Printer {
        parsers: parsers(),
        out: Vec::new(),
    });
    let _ = printer.post(Show(1, 7));
    let _ = printer.post(Parse(1, "a1b2".into()));
    rt.shutdown_graceful();
}
