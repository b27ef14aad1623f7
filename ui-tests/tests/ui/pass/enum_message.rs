//! Enums are messages: unit, tuple and struct variants.
use whirl::prelude::*;

#[derive(Message)]
enum Command {
    Start,
    Move(i32, i32),
    Rename { name: String },
}

#[derive(Message, Debug)]
struct Where(ReplyTo<(i32, i32, String)>);

#[process]
struct Turtle {
    running: bool,
    at: (i32, i32),
    name: String,
}

#[process]
impl Turtle {
    #[handle]
    fn command(&mut self, command: Command) -> Result<(), Failure> {
        match command {
            Command::Start => self.running = true,
            Command::Move(..) if !self.running => return Err(Failure::new("not started")),
            Command::Move(dx, dy) => self.at = (self.at.0 + dx, self.at.1 + dy),
            Command::Rename { name } => self.name = name,
        }
        Ok(())
    }

    #[handle]
    fn report(&mut self, Where(reply): Where) {
        let _ = reply.send((self.at.0, self.at.1, self.name.clone()));
    }
}

fn main() {
    let rt = Runtime::builder().threads(1).build().expect("the runtime starts");
    let turtle = rt.spawn(Turtle {
        running: false,
        at: (0, 0),
        name: String::new(),
    });
    turtle.post(Command::Start).unwrap();
    turtle.post(Command::Move(2, -1)).unwrap();
    turtle.post(Command::Rename { name: "leo".into() }).unwrap();
    assert_eq!(turtle.request_with(Where).call().unwrap(), (2, -1, "leo".to_owned()));
    rt.shutdown_graceful();
}
