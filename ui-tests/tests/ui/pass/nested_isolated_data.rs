//! `#[derive(Isolated)]` makes user data usable inside messages and state, transitively,
//! including generic and recursive types.
#![allow(dead_code)]
use std::collections::HashMap;
use std::sync::Arc;

use whirl::prelude::*;

#[derive(Isolated, Clone)]
struct Point {
    x: i32,
    y: i32,
}

#[derive(Isolated, Clone)]
enum Shape {
    Dot(Point),
    Path(Vec<Point>),
}

#[derive(Isolated)]
struct Tree<T> {
    value: T,
    children: Vec<Tree<T>>,
}

#[derive(Isolated)]
struct List {
    head: u32,
    tail: Option<Box<Self>>,
}

#[derive(Isolated)]
struct Chain<T> {
    value: T,
    next: Option<Box<Self>>,
}

#[derive(Message)]
struct Draw {
    shapes: HashMap<String, Shape>,
    layers: Tree<Arc<str>>,
    order: List,
    chain: Chain<String>,
}

#[process]
struct Canvas {
    drawn: Vec<Shape>,
    layers: Option<Tree<Arc<str>>>,
}

#[process]
impl Canvas {
    #[handle]
    fn draw(&mut self, msg: Draw) {
        self.drawn.extend(msg.shapes.into_values());
        self.layers = Some(msg.layers);
        let _ = (msg.order.head, msg.order.tail.map(|t| t.head));
    }
}

fn main() {
    let rt = Runtime::builder().threads(1).build().expect("the runtime starts");
    let canvas = rt.spawn(Canvas {
        drawn: Vec::new(),
        layers: None,
    });
    let shapes = HashMap::from([
        ("dot".to_owned(), Shape::Dot(Point { x: 1, y: 2 })),
        (
            "line".to_owned(),
            Shape::Path(vec![Point { x: 0, y: 0 }, Point { x: 3, y: 4 }]),
        ),
    ]);
    let layers = Tree {
        value: Arc::from("root"),
        children: vec![Tree {
            value: Arc::from("top"),
            children: vec![],
        }],
    };
    let order = List {
        head: 1,
        tail: Some(Box::new(List {
            head: 2,
            tail: None,
        })),
    };
    let chain = Chain {
        value: "a".to_owned(),
        next: Some(Box::new(Chain {
            value: "b".to_owned(),
            next: None,
        })),
    };
    canvas
        .post(Draw {
            shapes,
            layers,
            order,
            chain,
        })
        .unwrap();
    rt.shutdown_graceful();
}
