//! `trust_isolated!` needs a reason too.
mod generated {
    pub struct Row {
        pub id: u64,
    }
}

whirl::trust_isolated!(generated::Row => "");

fn main() {}
