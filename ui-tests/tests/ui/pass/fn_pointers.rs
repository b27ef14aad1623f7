//! Class 4: function pointers carry no data, higher-ranked ones included.
use whirl::prelude::*;

#[derive(Message)]
struct Install {
    parse: fn(&str) -> usize,
    pick: for<'a> fn(&'a str) -> &'a str,
    combine: fn(u64, u64) -> u64,
}

#[derive(Message, Debug)]
struct Apply(String, ReplyTo<(usize, String, u64)>);

#[process]
struct Calculator {
    parse: fn(&str) -> usize,
    pick: for<'a> fn(&'a str) -> &'a str,
    combine: fn(u64, u64) -> u64,
}

#[process]
impl Calculator {
    #[handle]
    fn install(&mut self, msg: Install) {
        self.parse = msg.parse;
        self.pick = msg.pick;
        self.combine = msg.combine;
    }

    #[handle]
    fn apply(&mut self, Apply(text, reply): Apply) {
        let _ = reply.send((
            (self.parse)(&text),
            (self.pick)(&text).to_owned(),
            (self.combine)(2, 3),
        ));
    }
}

fn first_word(s: &str) -> &str {
    s.split(' ').next().unwrap_or("")
}

fn main() {
    let rt = Runtime::builder().threads(1).build().expect("the runtime starts");
    let calc = rt.spawn(Calculator {
        parse: |s| s.len(),
        pick: |s| s,
        combine: |a, b| a + b,
    });
    calc.post(Install {
        parse: |s| s.split(' ').count(),
        pick: first_word,
        combine: |a, b| a * b,
    })
    .unwrap();
    let answer = calc.request_with(|r| Apply("hello isolated world".into(), r)).call().unwrap();
    assert_eq!(answer, (3, "hello".to_owned(), 6));
    rt.shutdown_graceful();
}
