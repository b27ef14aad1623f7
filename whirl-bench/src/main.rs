//! `whirl-bench`: record, list and compare benchmark runs (see the crate docs).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use whirl_bench::{Comparison, Run, RunId, Store, SuiteCommand, DEFAULT_THRESHOLD_PCT};

/// Records whirl's bench suite runs in SQLite, lists them and compares two of them.
///
/// Exit status: 0 success, 1 error, 2 `compare` flagged at least one regression.
#[derive(Parser)]
#[command(name = "whirl-bench", version)]
struct Cli {
    /// The history database.
    #[arg(
        long,
        global = true,
        value_name = "PATH",
        default_value = "bench-history.sqlite"
    )]
    db: PathBuf,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Runs the bench suite, stores the run and compares it with the previous run of the
    /// same suite.
    Record {
        /// Runs `bench quick` (1/10 of the work) instead of the full suite.
        #[arg(long)]
        quick: bool,
        /// A prebuilt bench binary, run as `PATH [quick] --json`, instead of
        /// `cargo run --release -q -p bench --bin bench -- [quick] --json`.
        #[arg(long, value_name = "PATH")]
        bench_bin: Option<PathBuf>,
        /// The regression threshold of the comparison, in percent.
        #[arg(long, value_name = "PCT", default_value_t = DEFAULT_THRESHOLD_PCT)]
        threshold: f64,
    },
    /// Lists every recorded run, oldest first.
    History,
    /// Compares run B against the baseline run A; exits 2 when a regression is flagged.
    Compare {
        /// The baseline run's id.
        a: i64,
        /// The id of the run judged against it.
        b: i64,
        /// A figure worse by more than this, in percent, is a regression.
        #[arg(long, value_name = "PCT", default_value_t = DEFAULT_THRESHOLD_PCT)]
        threshold: f64,
    },
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            // Exit status 2 means "regression": usage errors are plain errors here.
            return if e.use_stderr() {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    match run(cli) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("whirl-bench: {message}");
            ExitCode::from(1)
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode, String> {
    match cli.command {
        Command::Record {
            quick,
            bench_bin,
            threshold,
        } => record(&cli.db, quick, bench_bin, threshold),
        Command::History => {
            let store = open_existing(&cli.db)?;
            print_history(&store.runs().map_err(|e| e.to_string())?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Compare { a, b, threshold } => {
            let store = open_existing(&cli.db)?;
            let comparison = store
                .compare(RunId(a), RunId(b), threshold)
                .map_err(|e| e.to_string())?;
            print_comparison(&comparison);
            Ok(if comparison.regressions > 0 {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            })
        }
    }
}

fn open_existing(db: &Path) -> Result<Store, String> {
    Store::open_existing(db).map_err(|e| match e {
        whirl_bench::Error::NoDatabase(_) => e.to_string(),
        e => format!("{}: {e}", db.display()),
    })
}

fn record(
    db: &Path,
    quick: bool,
    bench_bin: Option<PathBuf>,
    threshold: f64,
) -> Result<ExitCode, String> {
    if !(threshold.is_finite() && threshold >= 0.0) {
        return Err(format!(
            "invalid threshold {threshold}: expected a percentage >= 0"
        ));
    }
    // Open first: a bad --db fails before minutes of benchmarking.
    let store = Store::open(db).map_err(|e| format!("{}: {e}", db.display()))?;
    let cwd = std::env::current_dir().map_err(|e| e.to_string())?;
    let (command, git_dir) = match bench_bin {
        Some(path) => (SuiteCommand::binary(path, quick), cwd),
        None => {
            let root = whirl_bench::workspace_root()
                .ok_or("cannot find the cargo workspace (run inside it, or pass --bench-bin)")?;
            (SuiteCommand::cargo(&root, quick), root)
        }
    };
    eprintln!("running {}", command.display());
    let output = command.run().map_err(|e| e.to_string())?;
    let suite = output
        .suite
        .unwrap_or_else(|| command.default_suite_name().to_owned());
    let meta = whirl_bench::RunMeta::gather(&git_dir, suite);
    let id = store
        .record(&meta, &output.figures)
        .map_err(|e| e.to_string())?;
    println!(
        "recorded run {id}: {}, commit {}{}, {}, {}, {} figures, in {}",
        meta.suite,
        meta.commit,
        if meta.dirty { " (dirty)" } else { "" },
        meta.machine_label(),
        meta.date,
        output.figures.len(),
        db.display()
    );
    let previous = store
        .previous_of_same_suite(id)
        .map_err(|e| e.to_string())?;
    match previous {
        Some(prev) => {
            println!();
            let comparison = store
                .compare(prev, id, threshold)
                .map_err(|e| e.to_string())?;
            print_comparison(&comparison);
        }
        None => println!("no earlier {:?} run to compare with", meta.suite),
    }
    Ok(ExitCode::SUCCESS)
}

fn print_history(runs: &[Run]) {
    if runs.is_empty() {
        println!("no runs recorded");
        return;
    }
    println!(
        "{:>4}  {:<20}  {:<12}  {:<24}  {:<12}  {:>7}",
        "id", "date", "commit", "machine", "suite", "figures"
    );
    for run in runs {
        let commit = format!(
            "{}{}",
            run.meta.commit,
            if run.meta.dirty { "*" } else { "" }
        );
        println!(
            "{:>4}  {:<20}  {:<12}  {:<24}  {:<12}  {:>7}",
            run.id,
            run.meta.date,
            commit,
            run.meta.machine_label(),
            run.meta.suite,
            run.figures.len()
        );
    }
    if runs.iter().any(|r| r.meta.dirty) {
        println!("* uncommitted changes to tracked files when recorded");
    }
}

fn print_comparison(c: &Comparison) {
    println!(
        "run {} ({}, {}) -> run {} ({}, {}), threshold {}%",
        c.a.id, c.a.commit, c.a.date, c.b.id, c.b.commit, c.b.date, c.threshold_pct
    );
    if c.rows.is_empty() {
        println!("the runs have no figure in common");
        return;
    }
    let width = c
        .rows
        .iter()
        .map(|r| r.name.len())
        .max()
        .unwrap_or(0)
        .max(6);
    println!(
        "{:<width$}  {:>8}  {:>12}  {:>12}  {:>8}",
        "figure", "unit", "a", "b", "change"
    );
    for row in &c.rows {
        let change = row
            .change_pct
            .map_or_else(|| "n/a".to_owned(), |p| format!("{p:+.1}%"));
        let flag = if row.regression {
            "  REGRESSION"
        } else if row.improvement(c.threshold_pct) {
            "  better"
        } else {
            ""
        };
        let direction = if row.higher_is_better {
            ""
        } else {
            " (lower is better)"
        };
        println!(
            "{:<width$}  {:>8}  {:>12}  {:>12}  {:>8}{flag}{}",
            row.name,
            row.unit,
            human(row.a, &row.unit),
            human(row.b, &row.unit),
            change,
            if row.regression { direction } else { "" }
        );
    }
    match c.regressions {
        0 => println!("no regression beyond {}%", c.threshold_pct),
        1 => println!("1 regression beyond {}%", c.threshold_pct),
        n => println!("{n} regressions beyond {}%", c.threshold_pct),
    }
}

/// `1.23 M`, `45.6 k`, `2.41` for ratios, `312` otherwise.
fn human(value: f64, unit: &str) -> String {
    if unit == "x" {
        format!("{value:.2}")
    } else if value.abs() >= 1e6 {
        format!("{:.2} M", value / 1e6)
    } else if value.abs() >= 1e4 {
        format!("{:.1} k", value / 1e3)
    } else if value.fract() == 0.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.2}")
    }
}
