//! `Recipient<M>`: "anyone who handles `M`", with the process type erased, and the same
//! guarantees as `Addr::post`. Also the identity of addresses (equality, hashing, ids).

mod common;

use std::collections::HashSet;
use std::thread;
use whirl_runtime::request::Sender as _;

use whirl_runtime::{
    Addr, Ctx, Failure, Handles, Isolated, Message, PostError, Process, Recipient, ReplyTo, Runtime,
};

use whirl_runtime::admission::Offer;

#[derive(Debug, PartialEq)]
struct Note(String);
// SAFETY: a `String`: owned data.
unsafe impl Isolated for Note {}
impl Message for Note {}

/// Asks a `Journal` for its notes.
struct ReadNotes(ReplyTo<Vec<String>>);
// SAFETY: a reply handle for owned strings.
unsafe impl Isolated for ReadNotes {}
impl Message for ReadNotes {}

/// Asks a `Tally` for its count.
struct ReadCount(ReplyTo<usize>);
// SAFETY: a reply handle for a number.
unsafe impl Isolated for ReadCount {}
impl Message for ReadCount {}

/// Two unrelated process types that both accept `Note`.
struct Journal {
    notes: Vec<String>,
}

enum JournalMsg {
    Note(Note),
    Read(ReplyTo<Vec<String>>),
    Close,
}

// SAFETY: strings and reply handles for owned data, or no data.
unsafe impl Isolated for JournalMsg {}
impl Message for JournalMsg {}

// SAFETY: the state is owned strings; the messages are isolated (above).
unsafe impl Process for Journal {
    type Message = JournalMsg;

    fn handle(&mut self, msg: JournalMsg, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        match msg {
            JournalMsg::Note(Note(text)) => self.notes.push(text),
            JournalMsg::Read(reply) => {
                let _ = reply.send(self.notes.clone());
            }
            JournalMsg::Close => ctx.complete(),
        }
        Ok(())
    }
}

impl whirl_runtime::Handles<JournalMsg> for Journal {
    fn into_message(msg: JournalMsg) -> JournalMsg {
        msg
    }
}

impl Handles<Note> for Journal {
    fn into_message(n: Note) -> JournalMsg {
        JournalMsg::Note(n)
    }
}

impl Handles<ReadNotes> for Journal {
    fn into_message(ReadNotes(r): ReadNotes) -> JournalMsg {
        JournalMsg::Read(r)
    }
}

struct Tally {
    chars: usize,
}

enum TallyMsg {
    Note(Note),
    Read(ReplyTo<usize>),
}

// SAFETY: a string or a reply handle for a number.
unsafe impl Isolated for TallyMsg {}
impl Message for TallyMsg {}

// SAFETY: the state is a number; the messages are isolated (above).
unsafe impl Process for Tally {
    type Message = TallyMsg;

    fn handle(&mut self, msg: TallyMsg, _ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        match msg {
            TallyMsg::Note(Note(text)) => self.chars += text.len(),
            TallyMsg::Read(reply) => {
                let _ = reply.send(self.chars);
            }
        }
        Ok(())
    }
}

impl whirl_runtime::Handles<TallyMsg> for Tally {
    fn into_message(msg: TallyMsg) -> TallyMsg {
        msg
    }
}

impl Handles<Note> for Tally {
    fn into_message(n: Note) -> TallyMsg {
        TallyMsg::Note(n)
    }
}

impl Handles<ReadCount> for Tally {
    fn into_message(ReadCount(r): ReadCount) -> TallyMsg {
        TallyMsg::Read(r)
    }
}

fn journal(rt: &Runtime) -> Addr<Journal> {
    rt.spawn(Journal { notes: Vec::new() })
}

fn read(j: &Addr<Journal>) -> Vec<String> {
    j.request_with(ReadNotes).call().unwrap()
}

#[test]
fn recipients_of_different_process_types_share_one_type() {
    let rt = Runtime::builder()
        .threads(2)
        .build()
        .expect("the runtime starts");
    let j = journal(&rt);
    let t = rt.spawn(Tally { chars: 0 });
    let everyone: Vec<Recipient<Note>> = vec![j.recipient(), Recipient::from(t.clone())];
    assert_eq!(everyone[0].id(), j.id());
    assert_eq!(everyone[1].id(), t.id());
    for word in ["alpha", "beta", "gamma"] {
        for r in &everyone {
            r.post(Note(word.into())).unwrap();
        }
    }
    assert_eq!(read(&j), vec!["alpha", "beta", "gamma"]);
    assert_eq!(t.request_with(ReadCount).call().unwrap(), 14);
    let shown = format!("{:?}", everyone[0]);
    assert!(
        shown.contains("Note") && shown.contains(&j.id().to_string()),
        "{shown}"
    );
    rt.shutdown_graceful();
}

#[test]
fn a_recipient_keeps_fifo_order_and_works_from_many_threads() {
    let rt = Runtime::builder()
        .threads(2)
        .build()
        .expect("the runtime starts");
    let j = journal(&rt);
    let r: Recipient<Note> = j.recipient();
    thread::scope(|s| {
        for t in 0..4 {
            let r = r.clone();
            s.spawn(move || {
                for i in 0..1_000 {
                    r.post(Note(format!("{t}:{i}"))).unwrap();
                }
            });
        }
    });
    let notes = read(&j);
    assert_eq!(notes.len(), 4_000);
    for t in 0..4 {
        let mine: Vec<&String> = notes
            .iter()
            .filter(|n| n.starts_with(&format!("{t}:")))
            .collect();
        let expected: Vec<String> = (0..1_000).map(|i| format!("{t}:{i}")).collect();
        assert_eq!(mine, expected.iter().collect::<Vec<_>>());
    }
    rt.shutdown_graceful();
}

#[test]
fn a_recipient_returns_the_message_when_the_process_has_terminated() {
    let rt = Runtime::builder()
        .threads(2)
        .build()
        .expect("the runtime starts");
    let j = journal(&rt);
    let r = j.recipient::<Note>();
    j.post(JournalMsg::Close).unwrap();
    rt.block_until_idle();
    assert_eq!(
        r.post(Note("late".into())),
        Err(PostError::Terminated(Note("late".into())))
    );
    rt.shutdown_graceful();
}

#[test]
fn a_recipient_returns_the_message_when_the_group_rejects_it() {
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let closed = rt
        .group("closed")
        .threads(1)
        .predicate(|_: &Offer<'_>| false)
        .build()
        .expect("build group");
    let j = rt
        .spawner()
        .group(&closed)
        .spawn(Journal { notes: Vec::new() });
    let r: Recipient<Note> = j.clone().into();
    assert_eq!(
        r.post(Note("no room".into())),
        Err(PostError::Rejected(Note("no room".into())))
    );
    rt.block_until_idle();
    let counts = closed.counts();
    common::assert_balanced(&counts);
    assert_eq!(counts.rejected, 1);
    rt.shutdown_graceful();
}

#[test]
fn addresses_are_equal_hashable_and_named_by_id() {
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let a = journal(&rt);
    let b = journal(&rt);
    assert_eq!(a, a.clone());
    assert_ne!(a, b);
    assert_ne!(a.id(), b.id());
    // `Addr` hashes by id, which never changes; clippy cannot see that through the cell.
    #[allow(clippy::mutable_key_type)]
    let set: HashSet<Addr<Journal>> = [a.clone(), a.clone(), b.clone()].into_iter().collect();
    assert_eq!(set.len(), 2);
    let shown = format!("{a:?}");
    assert!(
        shown.contains("Journal") && shown.contains(&a.id().to_string()),
        "{shown}"
    );
    assert!(!a.is_terminated());
    rt.shutdown_graceful();
    assert!(a.is_terminated() && b.is_terminated());
}
