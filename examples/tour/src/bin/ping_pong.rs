//! Two linked processes play a rally of a million round trips; then one is injured, its
//! partner fails with it (linked peers fail together), and a system process that monitors both
//! reports the two termination notices. Finally the message accounting shows nothing was lost.
//!
//! ```text
//! cargo run --release -p tour --bin ping_pong
//! ```

use std::time::Instant;

use whirl::prelude::*;

/// Who to play with. The two players link to each other.
#[derive(Message)]
struct Partner(Addr<Player>);

/// Starts a rally of `hits` hits; `done` is answered when the last ball is played.
#[derive(Message)]
struct Serve {
    hits: u64,
    done: ReplyTo<()>,
}

/// The ball, with the number of hits left in the rally.
#[derive(Message)]
struct Ball(u64);

/// How many balls a player has hit.
#[derive(Message)]
struct Hits(ReplyTo<u64>);

/// Injures a player: its process fails.
#[derive(Message)]
struct Injure;

#[process]
struct Player {
    name: &'static str,
    partner: Option<Addr<Player>>,
    hits: u64,
    rally: Option<ReplyTo<()>>,
}

#[process]
impl Player {
    #[handle]
    fn partner(&mut self, Partner(partner): Partner, ctx: &mut Ctx<Self>) {
        ctx.link(&partner);
        self.partner = Some(partner);
    }

    #[handle]
    fn serve(&mut self, serve: Serve) -> Result<(), Failure> {
        self.rally = Some(serve.done);
        self.play(serve.hits)
    }

    #[handle]
    fn ball(&mut self, Ball(left): Ball) -> Result<(), Failure> {
        self.hits += 1;
        match (left, self.rally.take()) {
            (1, Some(done)) => {
                let _ = done.send(());
                Ok(())
            }
            (_, rally) => {
                self.rally = rally;
                self.play(left - 1)
            }
        }
    }

    #[handle]
    fn report(&mut self, Hits(reply): Hits) {
        let _ = reply.send(self.hits);
    }

    #[handle]
    fn injure(&mut self, _: Injure) -> Result<(), Failure> {
        Err(Failure::new(format!("{} is injured", self.name)))
    }
}

impl Player {
    fn play(&mut self, left: u64) -> Result<(), Failure> {
        let partner = self
            .partner
            .as_ref()
            .ok_or_else(|| Failure::new("no partner yet"))?;
        partner
            .post(Ball(left))
            .map_err(|_| Failure::new("the partner left the court"))
    }
}

/// Asks the referee to watch a player.
#[derive(Message)]
struct Watch(Addr<Player>, &'static str);

/// Asks the referee for what it saw.
#[derive(Message)]
struct Reports(ReplyTo<Vec<String>>);

/// A system process: termination notices arrive as ordinary `Down` messages.
#[process(system)]
struct Referee {
    names: Vec<(ProcessId, &'static str)>,
    seen: Vec<String>,
}

#[process]
impl Referee {
    #[handle]
    fn watch(&mut self, Watch(player, name): Watch, ctx: &mut Ctx<Self>) {
        ctx.monitor(&player);
        self.names.push((player.id(), name));
    }

    #[handle]
    fn down(&mut self, notice: Down) {
        let name = self
            .names
            .iter()
            .find(|(id, _)| *id == notice.id)
            .map_or("someone", |(_, name)| name);
        self.seen
            .push(format!("{name} {} is down: {}", notice.id, notice.reason));
    }

    #[handle]
    fn reports(&mut self, Reports(reply): Reports) {
        let _ = reply.send(std::mem::take(&mut self.seen));
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    const ROUND_TRIPS: u64 = 1_000_000;
    let rt = Runtime::new();
    let player = |name| Player {
        name,
        partner: None,
        hits: 0,
        rally: None,
    };
    let (ping, pong) = (rt.spawn(player("ping")), rt.spawn(player("pong")));
    ping.post(Partner(pong.clone()))?;
    pong.post(Partner(ping.clone()))?;
    let referee = rt.spawn(Referee {
        names: Vec::new(),
        seen: Vec::new(),
    });
    referee.post(Watch(ping.clone(), "ping"))?;
    referee.post(Watch(pong.clone(), "pong"))?;
    rt.block_until_idle();

    println!(
        "a rally of {ROUND_TRIPS} round trips on {} worker threads...",
        rt.default_group().threads()
    );
    let start = Instant::now();
    ping.request_with(|done| Serve {
        hits: 2 * ROUND_TRIPS,
        done,
    })
    .call()?;
    let elapsed = start.elapsed();
    let (ping_hits, pong_hits) = (
        ping.request_with(Hits).call()?,
        pong.request_with(Hits).call()?,
    );
    let messages = ping_hits + pong_hits;
    println!(
        "  {messages} balls in {elapsed:.1?} ({:.2} M messages/s): ping hit {ping_hits}, pong hit {pong_hits}",
        messages as f64 / elapsed.as_secs_f64() / 1e6,
    );

    println!("ping is injured; pong is linked to it, and the referee monitors both:");
    ping.post(Injure)?;
    rt.block_until_idle();
    for report in referee.request_with(Reports).call()? {
        println!("  referee: {report}");
    }
    match pong.post(Ball(1)) {
        Err(e) if e.is_terminated() => println!("  a ball for pong comes back: {e}"),
        other => println!("  unexpected: {other:?}"),
    }

    // The referee answered from inside its turn; the turn's count lands when it ends.
    rt.block_until_idle();
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
    Ok(())
}
