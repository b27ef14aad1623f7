//! The demo's middle steps, on node A and through the children: the registry and remote asks,
//! the flows and their checkpoints, the migration, and the kill.

use std::error::Error;
use std::sync::atomic::Ordering::SeqCst;
use std::thread;
use std::time::{Duration, Instant};

use whirl::prelude::*;
use whirl_dist::{NodeEvent, NodeId, Pid, RemoteExit};

use crate::account::{account_name, Pause};
use crate::accounting::NodeReport;
use crate::demo::Demo;
use crate::flow::{Load, Target};
use crate::settings::{
    ACK_GRACE, ASKS, ASK_TIMEOUT, DOWN_DEADLINE, POSTS_AFTER_KILL, SETUP_DEADLINE,
};
use crate::util::{from_json, ms, percentile, short_pid};

impl Demo {
    /// Step 2: the registry as A sees it, then remote asks to C's account, timed.
    pub fn registry_and_asks(&self) -> Result<(), String> {
        let deadline = Instant::now() + SETUP_DEADLINE;
        let mut found = Vec::new();
        for (label, pid) in [
            ("a", self.a_account.1),
            ("b", self.b.account),
            ("c", self.c.account),
        ] {
            let name = account_name(label);
            let target = Target::resolve(&self.node, &name, deadline)?;
            if target.pid != pid {
                return Err(format!(
                    "the registry gives {} for {name}, its node said {pid}",
                    target.pid
                ));
            }
            found.push(format!("{name} → {}", short_pid(target.pid)));
        }
        println!("registry (looked up on A): {}", found.join(", "));

        let c_account = Target::resolve(&self.node, &account_name("c"), deadline)?;
        let mut rtts = Vec::with_capacity(ASKS);
        for _ in 0..ASKS {
            let asked = Instant::now();
            let balance = c_account.ask_balance(ASK_TIMEOUT)?;
            rtts.push(asked.elapsed());
            if balance != 0 {
                return Err(format!(
                    "account-c's balance is {balance} before any deposit"
                ));
            }
        }
        rtts.sort();
        println!(
            "remote asks: {ASKS} Balance asks A → account-c (found by whereis): p50 {}, p99 {}, \
             max {}",
            ms(percentile(&rtts, 50.0)),
            ms(percentile(&rtts, 99.0)),
            ms(rtts.last().copied().unwrap_or_default())
        );
        Ok(())
    }

    /// Step 3: deposits flow A → account-b, A → account-c and C → account-a.
    pub fn start_load(&mut self) -> Result<(), String> {
        let rate = self.rate;
        for name in ["account-b", "account-c"] {
            self.loads.push(Load::start(&self.node, "A", name, rate)?);
        }
        self.c.request(&format!("LOAD account-a {rate}"), "OK")?;
        println!(
            "load: A → account-b, A → account-c, C → account-a, {rate} deposits/s each (1 to 7 \
             cents), posted by registry name with bounce handlers"
        );
        Ok(())
    }

    /// Pauses each flow in turn and checks its account's balance equals the deposits it had
    /// accepted.
    pub fn checkpoint(&mut self) -> Result<(), String> {
        let mut reports = Vec::new();
        for load in &self.loads {
            reports.push(load.checkpoint()?);
        }
        let answer = self.c.request("CHECK account-a", "CHECKED")?;
        reports.push(from_json("checkpoint", &answer)?);
        for r in &reports {
            println!(
                "checkpoint: {} → {} balance {} = the {} cents of the {} deposits accepted so far \
                 ({} posted, {} refused, {} bounced)",
                r.from,
                r.to,
                r.balance.unwrap_or_default(),
                r.accepted_cents,
                r.posted - r.refused() - r.bounced,
                r.posted,
                r.refused(),
                r.bounced
            );
        }
        Ok(())
    }

    /// A's running flow to the account registered as `name`.
    pub fn load(&self, name: &str) -> Result<&Load, String> {
        self.loads
            .iter()
            .find(|l| l.name == name)
            .ok_or_else(|| format!("A has no flow to {name}"))
    }

    /// Step 5: drain what flows into B, take B's report, SIGKILL it, and watch the survivors
    /// see it Down; then post to its account, which is refused at once.
    pub fn kill_b(&mut self) -> Result<(), String> {
        let victim = self.b.id;
        // Every flow whose account lives on B now (account-b; account-c too once migrated
        // there) stops and settles, so nothing sent to B is unacknowledged at the kill. C's
        // only flow goes to A.
        let (into_b, others): (Vec<Load>, Vec<Load>) = std::mem::take(&mut self.loads)
            .into_iter()
            .partition(|l| l.goes_to(&self.node, victim));
        self.loads = others;
        for load in into_b {
            let (target, report) = load.stop(&self.node)?;
            println!(
                "kill: flow A → {} stopped and settled: balance {} = deposits accepted ({} \
                 posted, {} refused, {} bounced)",
                report.to,
                report.balance.unwrap_or_default(),
                report.posted,
                report.refused(),
                report.bounced
            );
            self.stopped.push((target, report.balance));
        }
        thread::sleep(ACK_GRACE);
        let report: NodeReport = from_json("report", &self.b.request("REPORT", "REPORT")?)?;
        println!(
            "kill: B reports {} deposits handled, {} messages queued, {} dead-lettered, at rest: \
             {}",
            report.deposits_handled, report.rt_queued, report.rt_dead_lettered, report.at_rest
        );
        self.gone.push(report);
        if let Ok((_, reason)) = self.b_monitor.try_recv() {
            return Err(format!(
                "A's monitor of account-b fired before the kill: {reason:?}"
            ));
        }
        while self.events.try_recv().is_ok() {}

        let (killed, status) = self.b.kill()?;
        println!(
            "kill: SIGKILL to node B (OS pid {}): it ended with {status}",
            self.b.child.id()
        );
        let deadline = killed + DOWN_DEADLINE;
        let a_saw = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok((at, NodeEvent::Down { node, reason })) if node == victim => break (at, reason),
                Ok(_) => {}
                Err(_) => return Err(format!("A did not see B Down within {DOWN_DEADLINE:?}")),
            }
        };
        let c_saw = self
            .c
            .wait_event(&format!("DOWN {victim}"), deadline)
            .ok_or_else(|| format!("C did not see B Down within {DOWN_DEADLINE:?}"))?;
        let (fired, exit) = self
            .b_monitor
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .map_err(|_| {
                format!("A's monitor of account-b did not fire within {DOWN_DEADLINE:?}")
            })?;
        if exit != RemoteExit::NoConnection {
            return Err(format!(
                "A's monitor of account-b fired with {exit:?}, not NoConnection"
            ));
        }
        println!(
            "kill: A saw B Down ({:?}) {} after the kill; C saw it {} after; A's monitor of \
             account-b fired with {exit:?} {} after",
            a_saw.1,
            ms(a_saw.0.saturating_duration_since(killed)),
            ms(c_saw.saturating_duration_since(killed)),
            ms(fired.saturating_duration_since(killed))
        );
        let name = account_name("b");
        while !self.node.whereis_all(&name).is_empty() {
            if Instant::now() >= deadline {
                return Err(format!(
                    "{name} is still in A's registry {DOWN_DEADLINE:?} after the kill"
                ));
            }
            thread::sleep(Duration::from_millis(5));
        }
        println!(
            "kill: {name} is gone from A's registry {} after the kill",
            ms(killed.elapsed())
        );
        for (target, _) in &mut self.stopped {
            let refused_before = target.counts.refused_down.load(SeqCst);
            for _ in 0..POSTS_AFTER_KILL {
                target.post(&self.node, 1);
            }
            let refused = target.counts.refused_down.load(SeqCst) - refused_before;
            println!(
                "kill: {POSTS_AFTER_KILL} more posts to {} ({}): {refused} refused at once \
                 (Terminated)",
                target.name,
                short_pid(target.pid)
            );
            if refused != POSTS_AFTER_KILL {
                return Err(format!(
                    "{} of {POSTS_AFTER_KILL} posts to the dead node were not refused",
                    POSTS_AFTER_KILL - refused
                ));
            }
        }
        Ok(())
    }
}

/// Step 4, the migration: C's account moves to B with its state and its queue while A's
/// deposits to it flow; A's flow, which posts by registry name, follows it; its balance at B
/// must then equal the sum of the deposits A had accepted for it.
pub fn migrate_step(demo: &mut Demo) -> Result<(), Box<dyn Error>> {
    // Hold the account for a moment, so deposits queue up behind the pause and move with it.
    demo.node
        .remote::<Pause>(demo.c.account)
        .post(Pause(100))
        .map_err(|e| format!("cannot pause account-c: {e}"))?;
    thread::sleep(Duration::from_millis(50));
    let began = Instant::now();
    let answer = demo
        .c
        .request(&format!("MIGRATE account-c {}", demo.b.id), "MIGRATED")?;
    let took = began.elapsed();
    let mut words = answer.split_whitespace();
    let (node, local, queued) = (words.next(), words.next(), words.next());
    let (Some(node), Some(local), Some(queued)) = (node, local, queued) else {
        return Err(format!("malformed MIGRATED answer {answer:?}").into());
    };
    let node: NodeId = node.parse()?;
    let local: u64 = local.parse()?;
    let moved_to = Pid::new(node, local);
    if node != demo.b.id {
        return Err(format!("account-c moved to {moved_to}, not to node B").into());
    }
    println!(
        "migration: account-c moved from C to B as {moved_to} in {:.1} ms (the pause it was in \
         included), with the {queued} deposits queued for it; deposits kept flowing",
        took.as_secs_f64() * 1e3
    );
    // Let the flow run on at B a while, then pause it and check the balance there.
    thread::sleep(Duration::from_millis(300));
    let report = demo.load("account-c")?.checkpoint()?;
    if report.pid != moved_to.to_string() {
        return Err(format!(
            "the flow to account-c still posts to {}, not to {moved_to}",
            report.pid
        )
        .into());
    }
    println!(
        "migration: account-c at B: balance {} = the {} cents of the {} deposits A had accepted \
         for it (its state and its queue came along; A's posts to the old pid were redirected)",
        report.balance.unwrap_or_default(),
        report.accepted_cents,
        report.posted - report.refused() - report.bounced
    );
    Ok(())
}
