use whirl::prelude::*;

#[derive(Message)]
union Word {
    int: u32,
    float: f32,
}

fn main() {}
