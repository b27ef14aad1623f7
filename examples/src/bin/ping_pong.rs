//! Two processes hit a ball back and forth, then one of them is told to fail and its linked
//! partner goes down with it, while a supervisor-like system process watches.
//!
//! ```text
//! cargo run --release -p examples --bin ping_pong
//! ```

use std::sync::mpsc::{channel, Sender};
use std::time::Instant;

use whirl::{Addr, Ctx, Down, Failure, Process, ReplyTo, Runtime};

/// One player: returns every ball to its partner until the rally is over.
struct Player {
    name: &'static str,
    partner: Option<Addr<Player>>,
    hits: u64,
    rally_over: Sender<(&'static str, u64)>,
}

enum Shot {
    /// Who to play with; the two players are linked so they fail together.
    Partner(Addr<Player>),
    /// The ball, with the number of hits left in the rally.
    Ball(u64),
    /// How many balls this player has hit.
    Hits(ReplyTo<u64>),
    /// Injure the player: the process fails.
    Injure,
}

impl Process for Player {
    type Message = Shot;

    fn handle(&mut self, shot: Shot, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        match shot {
            Shot::Partner(partner) => {
                ctx.link(&partner);
                self.partner = Some(partner);
            }
            Shot::Ball(0) => {
                let _ = self.rally_over.send((self.name, self.hits));
            }
            Shot::Ball(left) => {
                self.hits += 1;
                let partner = self
                    .partner
                    .as_ref()
                    .ok_or_else(|| Failure::new("no partner yet"))?;
                if partner.post(Shot::Ball(left - 1)).is_err() {
                    return Err(Failure::new("partner left the court"));
                }
            }
            Shot::Hits(reply) => {
                let _ = reply.send(self.hits);
            }
            Shot::Injure => return Err(Failure::new(format!("{} is injured", self.name))),
        }
        Ok(())
    }
}

/// A system process: it monitors the players, and termination notices arrive as ordinary
/// messages.
struct Referee {
    reports: Sender<Down>,
}

enum Call {
    Watch(Addr<Player>),
    Down(Down),
}

impl Process for Referee {
    type Message = Call;

    fn handle(&mut self, call: Call, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        match call {
            Call::Watch(player) => ctx.monitor(&player),
            Call::Down(down) => {
                let _ = self.reports.send(down);
            }
        }
        Ok(())
    }

    fn down_message(notice: Down) -> Option<Call> {
        Some(Call::Down(notice))
    }
}

fn main() {
    const ROUND_TRIPS: u64 = 1_000_000;
    let rt = Runtime::new();
    let (over_tx, over_rx) = channel();
    let ping = rt.spawn(Player {
        name: "ping",
        partner: None,
        hits: 0,
        rally_over: over_tx.clone(),
    });
    let pong = rt.spawn(Player {
        name: "pong",
        partner: None,
        hits: 0,
        rally_over: over_tx,
    });
    ping.post(Shot::Partner(pong.clone())).expect("ping is alive");
    pong.post(Shot::Partner(ping.clone())).expect("pong is alive");

    let (down_tx, down_rx) = channel();
    let referee = rt.spawn(Referee { reports: down_tx });
    for player in [&ping, &pong] {
        referee
            .post(Call::Watch(player.clone()))
            .expect("the referee is alive");
    }
    rt.block_until_idle();

    println!(
        "rally of {ROUND_TRIPS} round trips on {} worker threads...",
        rt.default_group().threads()
    );
    let start = Instant::now();
    ping.post(Shot::Ball(2 * ROUND_TRIPS)).expect("ping is alive");
    let (last, _) = over_rx.recv().expect("the rally ends");
    let elapsed = start.elapsed();
    let hits = |p: &Addr<Player>| p.call(Shot::Hits).expect("player answers");
    let (ping_hits, pong_hits) = (hits(&ping), hits(&pong));
    println!(
        "  {} messages in {:.1?} ({:.2} M msgs/s); ping hit {ping_hits}, pong hit {pong_hits}, {last} saw the last ball",
        ping_hits + pong_hits,
        elapsed,
        (ping_hits + pong_hits) as f64 / elapsed.as_secs_f64() / 1e6,
    );

    println!("injuring ping; pong is linked to it, the referee monitors both:");
    ping.post(Shot::Injure).expect("ping is alive");
    for _ in 0..2 {
        let down = down_rx.recv().expect("the referee reports");
        let who = if down.id == ping.id() { "ping" } else { "pong" };
        println!("  referee: {who} {}: {}", down.id, down.reason);
    }
    match pong.post(Shot::Ball(1)) {
        Err(e) if e.is_terminated() => println!("  posting to pong now: {e}; the ball came back"),
        other => println!("  unexpected: {other:?}"),
    }
    let counts = rt.counts();
    println!(
        "accounting: posted {} = handled {} + rejected {} + dead letters {} + queued {}",
        counts.posted,
        counts.handled,
        counts.rejected,
        counts.dead_lettered,
        counts.queued()
    );
    rt.shutdown_graceful();
}
