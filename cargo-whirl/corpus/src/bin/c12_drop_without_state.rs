//! Closures, trait objects and drops that touch nothing shared.
// expect:
use whirl::prelude::*;

trait Shape {
    fn area(&self) -> f64;
}
struct Square(f64);
impl Shape for Square {
    fn area(&self) -> f64 {
        self.0 * self.0
    }
}
struct Guard(u32);
impl Drop for Guard {
    fn drop(&mut self) {
        self.0 = 0;
    }
}

#[derive(Message)]
struct Measure(Vec<f64>);

#[process]
struct Surveyor {
    total: f64,
}

#[process]
impl Surveyor {
    #[handle]
    fn measure(&mut self, Measure(sides): Measure) {
        let _guard = Guard(1);
        let shapes: Vec<Box<dyn Shape>> = sides
            .iter()
            .map(|s| Box::new(Square(*s)) as Box<dyn Shape>)
            .collect();
        self.total += shapes.iter().map(|s| s.area()).sum::<f64>();
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Surveyor { total: 0.0 }).post(Measure(vec![1.0]));
    rt.shutdown_graceful();
}
