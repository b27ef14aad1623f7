//! The `--json` document: every figure the run measured, for the benchmark recorder.

use serde::Serialize;

use crate::workloads::Sizes;

/// One figure of the `--json` document.
#[derive(Serialize)]
struct Figure {
    name: String,
    value: f64,
    unit: &'static str,
    higher_is_better: bool,
}

/// The `--json` document.
#[derive(Serialize)]
pub struct Report {
    suite: &'static str,
    threads: usize,
    runs: usize,
    sizes: Sizes,
    figures: Vec<Figure>,
}

impl Report {
    pub fn new(suite: &'static str, threads: usize, runs: usize, sizes: Sizes) -> Self {
        Report {
            suite,
            threads,
            runs,
            sizes,
            figures: Vec::new(),
        }
    }

    pub fn add(&mut self, name: impl Into<String>, value: f64, unit: &'static str, higher: bool) {
        let name = name.into();
        if value.is_finite() {
            self.figures.push(Figure {
                name,
                value,
                unit,
                higher_is_better: higher,
            });
        } else {
            eprintln!("warning: figure {name:?} is {value}, left out of the JSON document");
        }
    }

    /// Prints the document on stdout; exits with an error if it cannot be serialized.
    pub fn print(&self) {
        match serde_json::to_string_pretty(self) {
            Ok(doc) => println!("{doc}"),
            Err(e) => {
                eprintln!("cannot serialize the report: {e}");
                std::process::exit(1);
            }
        }
    }
}
