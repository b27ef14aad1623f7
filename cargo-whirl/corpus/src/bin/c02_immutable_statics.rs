//! Immutable statics of `Freeze` types cannot change: fine.
// expect:
use whirl::prelude::*;

static GREETING: &str = "hello";
static PRIMES: [u32; 4] = [2, 3, 5, 7];

struct Table {
    name: &'static str,
    rows: &'static [u32],
}
static TABLE: Table = Table {
    name: "primes",
    rows: &PRIMES,
};

#[derive(Message)]
struct Ask(usize);

#[process]
struct Oracle {
    answers: Vec<String>,
}

#[process]
impl Oracle {
    #[handle]
    fn ask(&mut self, Ask(i): Ask) {
        let prime = PRIMES.get(i).copied().unwrap_or(0);
        self.answers.push(format!(
            "{GREETING} {} {prime} {}",
            TABLE.name,
            TABLE.rows.len()
        ));
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt
        .spawn(Oracle {
            answers: Vec::new(),
        })
        .post(Ask(1));
    rt.shutdown_graceful();
}
