//! Process groups (Erlang's `pg`): join, leave, members, posting to all, and members leaving
//! by themselves when they end.

use std::time::{Duration, Instant};

use whirl::prelude::*;
use whirl::routing::ProcessGroups;

#[derive(Message, Clone)]
struct News(u64);

#[derive(Message, Clone)]
struct Alert;

#[derive(Message)]
struct Received(ReplyTo<Vec<u64>>);

#[derive(Message)]
struct Quit;

#[derive(Message)]
struct Crash;

#[process]
struct Reader {
    seen: Vec<u64>,
}

#[process]
impl Reader {
    #[handle]
    fn news(&mut self, News(n): News) {
        self.seen.push(n);
    }

    #[handle]
    fn alert(&mut self, _: Alert) {}

    #[handle]
    fn received(&mut self, Received(reply): Received) {
        let _ = reply.send(self.seen.clone());
    }

    #[handle]
    fn quit(&mut self, _: Quit, ctx: &mut Ctx<Self>) {
        ctx.complete();
    }

    #[handle]
    fn crash(&mut self, _: Crash) -> Result<(), Failure> {
        Err(Failure::new("injected"))
    }
}

/// Another process type in the same group: groups are typed by the message, not the process.
#[process]
struct Logger {
    lines: u64,
}

#[process]
impl Logger {
    #[handle]
    fn news(&mut self, _: News) {
        self.lines += 1;
    }

    #[handle]
    fn received(&mut self, Received(reply): Received) {
        let _ = reply.send(vec![self.lines]);
    }
}

/// Joins the runtime's group "joiners" from its own `started` hook.
#[process]
struct SelfJoiner;

#[process]
impl SelfJoiner {
    #[started]
    fn started(&mut self, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        ctx.process_groups()
            .group::<News>("joiners")
            .join(&ctx.myself());
        Ok(())
    }

    #[handle]
    fn news(&mut self, _: News) {}
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn join_post_all_and_leave() {
    let rt = Runtime::new();
    let sports = rt.process_groups().group::<News>("sports");
    let a = rt.spawn(Reader { seen: vec![] });
    let b = rt.spawn(Reader { seen: vec![] });
    let log = rt.spawn(Logger { lines: 0 });
    assert!(sports.join(&a));
    assert!(sports.join(&b));
    assert!(sports.join(&log));
    assert!(!sports.join(&a), "a second join does nothing");
    assert_eq!(sports.member_ids(), vec![a.id(), b.id(), log.id()]);

    let report = sports.post_all(News(1));
    assert_eq!(report.delivered, 3);
    assert!(report.failed.is_empty());

    assert!(sports.leave(&b));
    assert!(!sports.leave(&b));
    assert_eq!(sports.post_all(News(2)).delivered, 2);

    assert_eq!(a.request_with(Received).call().unwrap(), vec![1, 2]);
    assert_eq!(b.request_with(Received).call().unwrap(), vec![1]);
    assert_eq!(log.request_with(Received).call().unwrap(), vec![2]);

    // The members are ordinary recipients.
    for member in sports.members() {
        member.post(News(3)).unwrap();
    }
    assert_eq!(a.request_with(Received).call().unwrap(), vec![1, 2, 3]);
    rt.shutdown_graceful();
}

#[test]
fn members_that_end_leave_by_themselves() {
    let rt = Runtime::new();
    let room = rt.process_groups().group::<News>("room");
    let quitter = rt.spawn(Reader { seen: vec![] });
    let crasher = rt.spawn(Reader { seen: vec![] });
    let stayer = rt.spawn(Reader { seen: vec![] });
    for member in [&quitter, &crasher, &stayer] {
        assert!(room.join(member));
    }
    quitter.post(Quit).unwrap();
    crasher.post(Crash).unwrap();
    wait_for("the two to leave", || room.len() == 1);
    assert_eq!(room.member_ids(), vec![stayer.id()]);
    assert_eq!(room.post_all(News(9)).delivered, 1);
    // An ended process is never added.
    assert!(!room.join(&quitter));
    assert_eq!(room.len(), 1);
    rt.shutdown_graceful();
}

#[test]
fn post_all_to_an_empty_group_hands_the_message_back() {
    let rt = Runtime::new();
    let nobody = rt.process_groups().group::<News>("nobody");
    let report = nobody.post_all(News(4));
    assert_eq!(report.delivered, 0);
    match report.failed.as_slice() {
        [(None, PostError::Terminated(News(4)))] => {}
        other => panic!("unexpected {other:?}"),
    }
    rt.shutdown_graceful();
}

#[test]
fn groups_are_typed_by_message_and_local_to_their_table() {
    let rt = Runtime::new();
    let groups = rt.process_groups();
    let news = groups.group::<News>("ops");
    let alerts = groups.group::<Alert>("ops");
    let r = rt.spawn(Reader { seen: vec![] });
    assert!(news.join(&r));
    assert_eq!(
        alerts.len(),
        0,
        "same name, other message type: another group"
    );
    assert!(alerts.join(&r));
    assert_eq!(
        groups.which_groups(),
        vec![
            ("ops".to_owned(), std::any::type_name::<Alert>()),
            ("ops".to_owned(), std::any::type_name::<News>()),
        ]
    );
    // A private table does not see the runtime's.
    let private = ProcessGroups::default();
    assert!(private.group::<News>("ops").is_empty());
    // Another runtime has its own.
    let other = Runtime::new();
    assert!(other.process_groups().group::<News>("ops").is_empty());
    other.shutdown_graceful();
    assert!(news.leave(&r));
    assert!(alerts.leave(&r));
    assert!(groups.which_groups().is_empty());
    rt.shutdown_graceful();
}

#[test]
fn a_process_joins_from_its_handler_context() {
    let rt = Runtime::new();
    let joiners = rt.process_groups().group::<News>("joiners");
    let spawned: Vec<_> = (0..5).map(|_| rt.spawn(SelfJoiner)).collect();
    wait_for("five members", || joiners.len() == 5);
    assert_eq!(joiners.post_all(News(0)).delivered, 5);
    for p in &spawned {
        p.exit(ExitReason::Normal);
    }
    wait_for("all to leave", || joiners.is_empty());
    rt.shutdown_graceful();
}
