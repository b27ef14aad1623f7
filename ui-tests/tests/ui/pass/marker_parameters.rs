//! A type parameter that appears only in `PhantomData` markers needs no `Isolated` bound: a
//! typed id over any type is isolated, and `PhantomData<T>` needs only `T: Send`.
use std::cell::Cell;
use std::marker::PhantomData;
use std::rc::Rc;
use whirl::prelude::*;

/// A typed id: `T` is a compile-time tag, never stored.
#[derive(Isolated)]
struct Id<T> {
    raw: u64,
    _kind: PhantomData<fn() -> T>,
}

/// A parameter used only in a `PhantomData<T>` marker: `T` must be `Send`, nothing more.
#[derive(Message)]
struct Tagged<T> {
    n: u64,
    _tag: PhantomData<T>,
}

#[derive(Message)]
struct Lookup {
    id: Id<Rc<u8>>,
}

#[process]
struct Index<T> {
    next: u64,
    _kind: PhantomData<fn() -> T>,
}

#[process]
impl<T: 'static> Index<T> {
    #[handle]
    fn lookup(&mut self, msg: Lookup) -> u64 {
        self.next += msg.id.raw;
        self.next
    }

    #[handle]
    fn tagged(&mut self, msg: Tagged<Cell<u8>>) {
        self.next += msg.n;
    }
}

fn crosses<T: Isolated>() {}

fn main() {
    crosses::<Id<Rc<u8>>>();
    crosses::<Id<std::sync::Mutex<u8>>>();
    crosses::<Tagged<Cell<u8>>>();
    let rt = Runtime::new();
    let index = rt.spawn(Index::<Rc<u8>> {
        next: 0,
        _kind: PhantomData,
    });
    let id = Id {
        raw: 2,
        _kind: PhantomData,
    };
    index
        .post(Tagged::<Cell<u8>> {
            n: 1,
            _tag: PhantomData,
        })
        .unwrap();
    assert_eq!(index.call(Lookup { id }).unwrap(), 3);
    rt.shutdown_graceful();
}
