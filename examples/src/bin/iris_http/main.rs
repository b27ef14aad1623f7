//! The Whirlwind paper's IRIS HTTP server (section IV), built on whirl.
//!
//! This step holds only the pure building blocks (HTTP decoding and encoding, the users file,
//! the session table, the resource store and routing); the actors and sockets come next.
//!
//! ```text
//! cargo run --release -p examples --bin iris_http
//! ```

// the modules are wired by the server in the next step
#![allow(dead_code, unused_imports)]

mod config;
mod http;
mod routes;
mod sessions;
mod store;

fn main() {
    println!("iris_http: not wired yet");
}
