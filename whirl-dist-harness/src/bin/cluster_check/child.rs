//! The child: nodes B and C, each an OS process running this binary with `--child`, taking
//! the parent's commands on stdin and answering on stdout.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use whirl::prelude::*;
use whirl_dist::{Node, NodeEvent, NodeId, Pid};

use crate::account::{start_account, start_node, wait_for_peers, Account};
use crate::accounting::node_report;
use crate::flow::Load;
use crate::settings::{Args, REQUEST_TIMEOUT, SETUP_DEADLINE};
use crate::util::{short, to_json};

/// One line to the parent. A parent that is gone cannot read it; the child notices when its
/// stdin closes.
pub fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

pub fn child_main(label: &str, args: &Args) -> Result<(), String> {
    let cluster = args.cluster.as_deref().ok_or("--child needs --cluster")?;
    let port = args.listen.ok_or("--child needs --listen")?;
    let runtime = Runtime::new();
    let node = Arc::new(start_node(
        cluster,
        label,
        port,
        &args.connect,
        Duration::from_millis(args.lease_ms),
    )?);
    let events = node.events();
    thread::spawn(move || {
        for event in events {
            match event {
                NodeEvent::Up(id) => say(&format!("EVENT UP {id}")),
                NodeEvent::Down { node, .. } => say(&format!("EVENT DOWN {node}")),
                NodeEvent::ResurrectionRefused(id) => say(&format!("EVENT REFUSED {id}")),
                other => say(&format!("EVENT OTHER {other:?}")),
            }
        }
    });
    let (account, pid) = start_account(&runtime, &node, label)?;
    // Ready once the others are Up here: their mailboxes are then known, so the first
    // acknowledgements, answers and bounces have a route.
    wait_for_peers(&node, args.peers, Instant::now() + SETUP_DEADLINE)?;
    say(&format!("READY {} {}", node.id(), pid.local()));

    let mut loads: BTreeMap<String, Load> = BTreeMap::new();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let words: Vec<&str> = line.split_whitespace().collect();
        let answer = match words.as_slice() {
            ["LOAD", name, rate] => rate
                .parse::<u64>()
                .map_err(|_| format!("not a rate: {rate:?}"))
                .and_then(|rate| Load::start(&node, &label.to_uppercase(), name, rate))
                .map(|load| {
                    loads.insert((*name).to_owned(), load);
                    "OK".to_owned()
                }),
            ["CHECK", name] => match loads.get(*name) {
                Some(load) => load
                    .checkpoint()
                    .and_then(|report| to_json(&report))
                    .map(|json| format!("CHECKED {json}")),
                None => Err(format!("no flow to {name}")),
            },
            ["STOP", name] => match loads.remove(*name) {
                Some(load) => load
                    .stop(&node)
                    .and_then(|(_, report)| to_json(&report))
                    .map(|json| format!("STOPPED {json}")),
                None => Err(format!("no flow to {name}")),
            },
            ["REPORT"] => to_json(&node_report(&label.to_uppercase(), &node, &runtime))
                .map(|json| format!("REPORT {json}")),
            ["MIGRATE", name, to] => to
                .parse::<NodeId>()
                .map_err(|e| e.to_string())
                .and_then(|to| migrate_account(&node, &runtime, name, &account, to))
                .map(|(pid, queued)| format!("MIGRATED {} {} {queued}", pid.node(), pid.local())),
            _ => Err(format!("unknown command {line:?}")),
        };
        say(&answer.unwrap_or_else(|e| format!("ERR {e}")));
    }

    // Stdin closed: the parent is done, or gone. Shut down, within bounds.
    thread::spawn(|| {
        thread::sleep(Duration::from_secs(10));
        eprintln!("cluster_check: a child took over 10 s to shut down; exiting");
        std::process::exit(4);
    });
    for (_, load) in loads {
        let _ = load.halt();
    }
    let node = Arc::try_unwrap(node).map_err(|_| "the node is still shared at shutdown")?;
    let shutdown = node.shutdown();
    let _ = runtime.shutdown_timeout(Duration::from_secs(2));
    say("BYE");
    shutdown.map_err(|e| format!("node shutdown: {e}"))
}

/// The child's half of the migration: moves this node's account `name` (its process is
/// `account`) to node `to`, with its state, its queue, its name and its watchers, and returns
/// its pid there with the number of messages that moved with its queue. Run by the
/// `MIGRATE <name> <node-id>` command (see `steps::migrate_step`).
pub fn migrate_account(
    node: &Node,
    runtime: &Runtime,
    name: &str,
    account: &Addr<Account>,
    to: NodeId,
) -> Result<(Pid, u64), String> {
    let before = runtime.counts().moved;
    let pid = node
        .migrate(account, to, REQUEST_TIMEOUT)
        .map_err(|e| format!("migrating {name} to node {}: {e}", short(to)))?;
    Ok((pid, runtime.counts().moved - before))
}
