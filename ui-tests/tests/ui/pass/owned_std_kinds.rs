//! Owned data of every std kind crosses a process boundary.
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap, HashSet, LinkedList, VecDeque};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::num::NonZeroU64;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use whirl::prelude::*;

#[derive(Message)]
struct Everything {
    flag: bool,
    letter: char,
    small: u8,
    big: u128,
    signed: isize,
    ratio: f64,
    unit: (),
    text: String,
    boxed: Box<str>,
    slice: Box<[u16]>,
    bytes: Vec<u8>,
    queue: VecDeque<u32>,
    list: LinkedList<i8>,
    heap: BinaryHeap<u64>,
    map: HashMap<String, Vec<u8>>,
    tree: BTreeMap<u32, String>,
    set: HashSet<u64>,
    ordered: BTreeSet<char>,
    maybe: Option<Box<u64>>,
    outcome: Result<u64, String>,
    tuple: (u8, String, [u16; 4]),
    array: [String; 2],
    elapsed: Duration,
    at: Instant,
    wall: SystemTime,
    path: PathBuf,
    peer: SocketAddr,
    id: NonZeroU64,
    label: Cow<'static, str>,
}

#[derive(Message, Debug)]
struct Total(ReplyTo<usize>);

#[process]
struct Sink {
    received: Vec<Everything>,
}

#[process]
impl Sink {
    #[handle]
    fn keep(&mut self, everything: Everything) {
        self.received.push(everything);
    }

    #[handle]
    fn total(&mut self, Total(reply): Total) {
        let e = &self.received[0];
        let _ = (
            e.flag, e.letter, e.small, e.big, e.signed, e.ratio, e.unit, &e.boxed, &e.slice,
        );
        let _ = (
            &e.queue, &e.list, &e.heap, &e.map, &e.tree, &e.set, &e.ordered, &e.maybe,
        );
        let _ = (
            &e.outcome, &e.tuple, &e.array, e.elapsed, e.at, e.wall, &e.path, e.id,
        );
        let _ = reply.send(e.text.len() + e.bytes.len() + e.label.len() + e.peer.port() as usize);
    }
}

fn main() {
    let rt = Runtime::builder().threads(1).build().expect("the runtime starts");
    let sink = rt.spawn(Sink {
        received: Vec::new(),
    });
    let everything = Everything {
        flag: true,
        letter: 'w',
        small: 1,
        big: 2,
        signed: -3,
        ratio: 0.5,
        unit: (),
        text: "four".into(),
        boxed: "five".into(),
        slice: vec![6].into_boxed_slice(),
        bytes: vec![7, 7],
        queue: VecDeque::from([8]),
        list: LinkedList::new(),
        heap: BinaryHeap::from([9]),
        map: HashMap::new(),
        tree: BTreeMap::new(),
        set: HashSet::new(),
        ordered: BTreeSet::new(),
        maybe: Some(Box::new(10)),
        outcome: Ok(11),
        tuple: (12, "thirteen".into(), [14; 4]),
        array: ["15".into(), "16".into()],
        elapsed: Duration::from_millis(17),
        at: Instant::now(),
        wall: SystemTime::now(),
        path: PathBuf::from("/18"),
        peer: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 19),
        id: NonZeroU64::MIN,
        label: Cow::Borrowed("twenty"),
    };
    sink.post(everything).unwrap();
    assert_eq!(sink.request_with(Total).call().unwrap(), 4 + 2 + 6 + 19);
    rt.shutdown_graceful();
}
