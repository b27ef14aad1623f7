use whirl::prelude::*;

struct Point {
    x: i32,
    y: i32,
}

#[derive(Message)]
struct Move {
    to: Point,
}

fn main() {}
