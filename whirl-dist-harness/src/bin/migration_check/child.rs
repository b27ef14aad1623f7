//! The child: one whirl node (S, T or X) in an OS process running this binary with `--child`,
//! taking the parent's commands on stdin and answering on stdout, one line each (see
//! `main.rs` for the protocol).

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use whirl::prelude::*;
use whirl_dist::{Node, NodeConfig, NodeEvent, NodeId, Pid};

use crate::account::{Account, Deposit, Query};
use crate::copies;
use crate::moving::{hold_and_migrate, MigrationReport};
use crate::sender::{SenderSpec, SenderThread};
use crate::settings::{Args, ACCOUNT_KIND, ACCOUNT_NAME, ASK_TIMEOUT, SETUP_DEADLINE};
use crate::util::say;
use crate::util::{endpoint, parse_pid, to_json};

/// What the child is doing, on stderr, only when `RUST_LOG` is set.
pub fn log(label: &str, what: &str) {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    if *ON.get_or_init(|| std::env::var_os("RUST_LOG").is_some()) {
        // One write, so that the children's lines do not interleave.
        let line = format!("[node {label}] {what}\n");
        let _ = std::io::stderr().write_all(line.as_bytes());
    }
}

/// The node's distribution counters the check reads.
#[derive(Serialize, Deserialize, Debug, Clone, Default)]
pub struct NodeCounts {
    pub in_doubt: u64,
    pub redirected: u64,
    pub resent: u64,
    pub migrated_in: u64,
    pub migrated_out: u64,
}

pub fn child_main(label: &str, args: &Args) -> Result<(), String> {
    let cluster = args.cluster.as_deref().ok_or("--child needs --cluster")?;
    let certs = args.certs.as_deref().ok_or("--child needs --certs")?;
    let port = args.listen.ok_or("--child needs --listen")?;
    let runtime = Runtime::new();
    let node = Node::start(
        NodeConfig::new(cluster)
            .tls(
                certs.join(format!("{label}.pem")),
                certs.join(format!("{label}.key")),
                certs.join("ca.pem"),
            )
            .listen([endpoint(port)])
            .connect(args.connect.iter().cloned())
            .lease(Duration::from_millis(args.lease_ms))
            .reconnect_max(Duration::from_millis(500)),
    )
    .map_err(|e| format!("cannot start the node: {e}"))?;
    let node = Arc::new(node);
    let events = node.events();
    let who = label.to_owned();
    thread::spawn(move || {
        for event in events {
            match event {
                NodeEvent::Up(id) => say(&format!("EVENT UP {id}")),
                NodeEvent::Down { node, .. } => say(&format!("EVENT DOWN {node}")),
                other => log(&who, &format!("event {other:?}")),
            }
        }
    });
    // Accounts may move to and from every node, under the same kind name.
    node.accept_migrations::<Account, _>(ACCOUNT_KIND, runtime.default_group(), |export| {
        export.accept::<Deposit>().answer::<Query>()
    })
    .map_err(|e| format!("cannot accept migrations: {e}"))?;
    let deadline = Instant::now() + SETUP_DEADLINE;
    while node.members().len() < 2 {
        if Instant::now() >= deadline {
            return Err(format!(
                "saw {} of 2 peers Up in time",
                node.members().len()
            ));
        }
        thread::sleep(Duration::from_millis(5));
    }
    say(&format!("READY {}", node.id()));
    log(label, &format!("ready as {}", node.id()));

    let mut child = Child {
        label,
        node,
        runtime,
        account: None,
        senders: BTreeMap::new(),
    };
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        log(label, &format!("command {line}"));
        let answer = child.command(&line);
        say(&answer.unwrap_or_else(|e| format!("ERR {e}")));
    }
    child.shut_down()
}

/// The child's node, runtime, account (on S) and senders.
struct Child<'a> {
    label: &'a str,
    node: Arc<Node>,
    runtime: Runtime,
    account: Option<Addr<Account>>,
    senders: BTreeMap<u32, SenderThread>,
}

impl Child<'_> {
    fn command(&mut self, line: &str) -> Result<String, String> {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["SPAWN"] => self.spawn().map(|pid| format!("SPAWNED {pid}")),
            ["SEND", id, pid, count, rate, follow] => {
                let spec = SenderSpec {
                    id: parse(id)?,
                    pid: parse_pid(pid)?,
                    count: parse(count)?,
                    rate: parse(rate)?,
                    follow_name: *follow == "follow",
                };
                let sender = SenderThread::start(&self.node, spec)?;
                self.senders.insert(spec.id, sender);
                Ok("SENDING".to_owned())
            }
            ["SENDER", id] => {
                let id: u32 = parse(id)?;
                let sender = self.senders.get(&id).ok_or(format!("no sender {id}"))?;
                to_json(&sender.report()).map(|json| format!("SENDER {json}"))
            }
            ["HALT", id] => {
                let id: u32 = parse(id)?;
                let sender = self.senders.get_mut(&id).ok_or(format!("no sender {id}"))?;
                to_json(&sender.halt()?).map(|json| format!("HALTED {json}"))
            }
            ["MIGRATE", to, timeout_us, hold_ms, lead_ms] => {
                let to: NodeId = to.parse().map_err(|e| format!("{e}"))?;
                let timeout = Duration::from_micros(parse(timeout_us)?);
                let report = self.migrate(to, timeout, parse(hold_ms)?, parse(lead_ms)?)?;
                to_json(&report).map(|json| format!("MIGRATION {json}"))
            }
            ["QUERY", pid] => {
                let pid = parse_pid(pid)?;
                let tallies = self
                    .node
                    .remote::<Query>(pid)
                    .request(Query)
                    .timeout(ASK_TIMEOUT)
                    .call()
                    .map_err(|e| format!("asking {pid}: {e}"))?;
                to_json(&tallies).map(|json| format!("COUNTERS {json}"))
            }
            ["WHEREIS"] => {
                let all: Vec<String> = self
                    .node
                    .whereis_all(ACCOUNT_NAME)
                    .iter()
                    .map(Pid::to_string)
                    .collect();
                to_json(&all).map(|json| format!("WHEREIS {json}"))
            }
            ["COPIES"] => to_json(&copies::report()).map(|json| format!("COPIES {json}")),
            ["COUNTS"] => {
                let c = self.node.counts();
                let counts = NodeCounts {
                    in_doubt: c.in_doubt,
                    redirected: c.redirected,
                    resent: c.resent,
                    migrated_in: c.migrated_in,
                    migrated_out: c.migrated_out,
                };
                to_json(&counts).map(|json| format!("COUNTS {json}"))
            }
            _ => Err(format!("unknown command {line:?}")),
        }
    }

    /// Spawns the account here, exports it and registers it.
    fn spawn(&mut self) -> Result<Pid, String> {
        let account = self.runtime.spawn(Account::default());
        let pid = self
            .node
            .export(&account)
            .accept::<Deposit>()
            .answer::<Query>()
            .build()
            .map_err(|e| format!("cannot export the account: {e}"))?;
        self.node
            .register(ACCOUNT_NAME, pid)
            .map_err(|e| format!("cannot register the account: {e}"))?;
        self.account = Some(account);
        Ok(pid)
    }

    /// S's side of the migration (see [`hold_and_migrate`]).
    fn migrate(
        &mut self,
        to: NodeId,
        timeout: Duration,
        hold_ms: u64,
        lead_ms: u64,
    ) -> Result<MigrationReport, String> {
        let account = self.account.as_ref().ok_or("no account on this node")?;
        let report = hold_and_migrate(
            &self.node,
            &self.runtime,
            account,
            to,
            timeout,
            (hold_ms, lead_ms),
        )?;
        log(self.label, &format!("migration: {report:?}"));
        Ok(report)
    }

    /// Stdin closed: the parent is done, or gone. Shut down, within bounds.
    fn shut_down(mut self) -> Result<(), String> {
        thread::spawn(|| {
            thread::sleep(crate::settings::CHILD_GRACE);
            eprintln!("migration_check: a child took too long to shut down; exiting");
            std::process::exit(4);
        });
        for sender in self.senders.values_mut() {
            let _ = sender.halt();
        }
        drop(self.senders);
        let node =
            Arc::try_unwrap(self.node).map_err(|_| "the node is still shared at shutdown")?;
        let shutdown = node.shutdown();
        let _ = self.runtime.shutdown_timeout(Duration::from_secs(2));
        say("BYE");
        shutdown.map_err(|e| format!("node shutdown: {e}"))
    }
}

fn parse<T: std::str::FromStr>(word: &str) -> Result<T, String> {
    word.parse().map_err(|_| format!("not a number: {word:?}"))
}
