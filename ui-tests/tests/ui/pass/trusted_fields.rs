//! `#[isolated(trust = "why")]` trusts one field's type to be plain data, in messages, data
//! types, enum variants and process state; every other field is still checked.
//! `trust_isolated!` does the same for a whole type of one's own crate.
use whirl::prelude::*;

/// Stands in for a data type of another crate that no whirl feature covers.
mod geo {
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct Point {
        pub lat: f64,
        pub lon: f64,
    }

    /// Generic, like a foreign container.
    #[derive(Clone, Debug)]
    pub struct Path<T>(pub Vec<T>);
}

/// Stands in for code a build script generates: no derive can go on it.
mod generated {
    pub struct Row {
        pub id: u64,
    }
    pub struct Page<T> {
        pub rows: Vec<T>,
    }
}

whirl::trust_isolated!(generated::Row => "generated plain data: one u64");
whirl::trust_isolated!(impl<T> generated::Page<T> => "a page owns its rows");

#[derive(Message)]
struct Locate {
    #[isolated(trust = "geo::Point is two f64s: owned, Copy, no interior mutability")]
    at: geo::Point,
    user: String,
}

#[derive(Isolated, Clone)]
struct Trip<T> {
    #[isolated(trust = "geo::Path owns its points")]
    path: geo::Path<T>,
    name: String,
}

#[derive(Message)]
enum Update {
    Moved(
        #[isolated(trust = "geo::Point is two f64s")] geo::Point,
        u64,
    ),
    Gone,
}

#[derive(Message)]
struct Store(generated::Page<generated::Row>);

#[derive(Message, Debug)]
struct Last(ReplyTo<Option<u64>>);

#[derive(Message)]
struct Rows;

#[process]
struct Tracker {
    #[isolated(trust = "geo::Point is two f64s")]
    last: Option<geo::Point>,
    trips: Vec<Trip<u8>>,
    stored: u64,
}

#[process]
impl Tracker {
    #[handle]
    fn locate(&mut self, msg: Locate) {
        let _ = msg.user;
        self.last = Some(msg.at);
    }

    #[handle]
    fn update(&mut self, msg: Update) {
        if let Update::Moved(at, _) = msg {
            self.last = Some(at);
        }
    }

    #[handle]
    fn store(&mut self, Store(page): Store) {
        self.stored += page.rows.iter().map(|r| r.id).sum::<u64>();
    }

    #[handle]
    fn rows(&mut self, _: Rows) -> generated::Row {
        generated::Row { id: self.stored }
    }

    #[handle]
    fn last(&mut self, Last(reply): Last) {
        let _ = reply.send(self.last.map(|p| p.lat as u64 + p.lon as u64));
    }
}

fn main() {
    let rt = Runtime::new();
    let tracker = rt.spawn(Tracker {
        last: None,
        trips: vec![Trip {
            path: geo::Path(vec![1u8]),
            name: "home".into(),
        }],
        stored: 0,
    });
    tracker
        .post(Locate {
            at: geo::Point { lat: 1.0, lon: 2.0 },
            user: "ada".into(),
        })
        .unwrap();
    tracker.post(Update::Gone).unwrap();
    tracker
        .post(Store(generated::Page {
            rows: vec![generated::Row { id: 4 }],
        }))
        .unwrap();
    assert_eq!(tracker.request_with(Last).call().unwrap(), Some(3));
    assert_eq!(tracker.call(Rows).unwrap().id, 4);
    rt.shutdown_graceful();
}
