//! Procedural macros for whirl: `#[process]` (with `#[handle]`, `#[started]` and
//! `#[terminated]` inside it), `#[derive(Message)]`, `#[derive(Isolated)]` and
//! `#[allow_shared]`.
//!
//! Use them through the `whirl` crate (`use whirl::prelude::*;`), whose documentation is the
//! tutorial. The generated code names everything through `::whirl`, so the crate must be a
//! dependency under that name.
//!
//! Each macro runs the same three steps, one module each:
//!
//! 1. `ast` turns the `syn` input into a small model of what the user wrote, with `attr`
//!    parsing whirl's own attributes (`#[process(...)]`, `#[message(...)]`, `#[handle]`...);
//! 2. `valid` checks the model and reports *every* problem it finds, each spanned at the
//!    user's token;
//! 3. `expand` generates code from a valid model only, with the bounds computed in
//!    `generics`.
//!
//! `#[allow_shared]`, one argument on a function or a static, is parsed, checked and expanded
//! in `allow` alone.
//!
//! Imports point one way, down this list: `lib` → `allow` / `expand` → `valid` → `generics` → `ast` →
//! `attr` → `errors` (`errors` collects the spanned errors of every phase). `cargo test -p
//! architecture` checks that there is no cycle.
//!
//! Whatever the compiler checks better than a macro can (that a field's type is `Isolated`,
//! that a handler's parameter is a `Message`), the expansion turns into trait bounds spanned at
//! the user's tokens, and the traits' `#[diagnostic::on_unimplemented]` messages explain the
//! rule.

mod allow;
mod ast;
mod attr;
mod errors;
mod expand;
mod generics;
mod valid;

use proc_macro::TokenStream;
use syn::{parse_macro_input, DeriveInput};

/// Derives `Message` (and `Isolated`) for a type whose every field may cross a process
/// boundary.
///
/// Works on structs (named, tuple, unit) and enums, with type and const generics (each field
/// type that mentions a type parameter becomes a bound, so `Envelope<Rc<u8>>` is simply not a
/// message). Rejects borrowed lifetimes, unions and fields that are not `Isolated`, pointing at
/// the field's type.
///
/// `#[message(cost = EXPR)]` on the type (or on an enum variant) sets [`Message::cost`]; `EXPR`
/// is a `u64` expression that may use `self`.
///
/// [`Message::cost`]: https://docs.rs/whirl/latest/whirl/trait.Message.html#method.cost
#[proc_macro_derive(Message, attributes(message, shared, isolated))]
pub fn derive_message(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand::derive(&input, ast::Derive::Message)
        .unwrap_or_else(|err| err.to_compile_error())
        .into()
}

/// Derives `Isolated` for a plain data type used inside messages or process state, after
/// checking that every field is `Isolated` too. Rejects what `#[derive(Message)]` rejects.
#[proc_macro_derive(Isolated, attributes(shared, isolated))]
pub fn derive_isolated(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand::derive(&input, ast::Derive::Isolated)
        .unwrap_or_else(|err| err.to_compile_error())
        .into()
}

/// Declares a process: on its state type, and on the inherent impl block of its handlers.
///
/// On the struct or enum holding the state, it checks that every field is `Isolated` and takes
/// options: `system` (the process receives `Down` notices as messages and must handle them),
/// `group = "name"` (its default group), and `unsafe(shares_state = "reason")` (the escape hatch for
/// state knowingly shared within one group; fields holding it are marked `#[shared]`).
///
/// On the impl block, methods marked `#[handle]` become handlers, one per message type (see
/// `#[handle]` for their signatures: a handler may be an `async fn`, and returns `()`, a reply
/// value, or a `Result<T, E>` whose `E` converts into `Failure`). `#[started]` and
/// `#[terminated]` mark the lifecycle hooks (see their signatures there).
///
/// It generates the message enum, the process's `Process::Message` (reachable only as
/// `<Counter as Process>::Message`: one variant per handler, named after the message type it
/// holds — `Ping` for a handler of `msgs::Ping` — or, where two handled types end in the same
/// name, after the handler in CamelCase), the dispatch
/// `match`, `Handles<M>` and `From<M>` impls, and the `Process` impl. A method whose signature
/// is wrong is reported at its token and left out of the generated process, so the rest of
/// the program is not flooded with follow-on errors.
#[proc_macro_attribute]
pub fn process(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::process(args.into(), item.into())
        .unwrap_or_else(|err| err.to_compile_error())
        .into()
}

/// Allows a function or a `static` to share state between processes, with a reason, for
/// `cargo whirl check`.
///
/// The compiler checks what processes *hold* (fields and messages must be `Isolated`); `cargo
/// whirl check` checks what they *reach*: it walks every function reachable from every handler
/// and hook and reports each `static` with interior mutability, `static mut` and thread-local
/// it touches. Where that is the intent (a metrics counter, a pool built for sharing), this
/// attribute says so:
///
/// ```text
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// #[whirl::allow_shared(reason = "a statistic only: read by the operator, never by a process")]
/// static REQUESTS: AtomicU64 = AtomicU64::new(0);
///
/// #[whirl::allow_shared(reason = "the connection pool is made to be shared across threads")]
/// fn pool_size() -> u64 {
///     REQUESTS.load(Ordering::Relaxed)
/// }
/// ```
///
/// On a static, every access to it is allowed; on a function, its body and everything it calls.
/// The reason is mandatory and must not be empty; `cargo whirl check` lists every use, with its
/// reason, in its summary. The attribute changes nothing at run time: it puts
/// a call to an empty `const fn` first in the body (or the initialiser), which the checker finds
/// in the compiled code.
#[proc_macro_attribute]
pub fn allow_shared(args: TokenStream, item: TokenStream) -> TokenStream {
    allow::expand(args.into(), item.into()).into()
}

/// Marks a handler inside a `#[process]` impl block. Anywhere else it is an error.
///
/// Accepted signatures (one handler per message type; the context may be left out):
///
/// ```text
/// #[handle] fn name(&mut self, msg: M)
/// #[handle] fn name(&mut self, msg: M, ctx: &mut Ctx<Self>)
/// #[handle] fn name(&mut self, msg: M) -> R              // R: Reply, the answer
/// #[handle] fn name(&mut self, msg: M) -> Result<T, E>   // T: the answer; E: Into<Failure>
/// #[handle] async fn name(&mut self, msg: M) -> ...      // any of the results above
/// ```
///
/// The message is taken by value. A handler that returns something other than `()` answers
/// whoever sent the message with `call` or `ask` (nobody, for a `post`); for a handler that
/// returns `()`, `call` and `ask` do not compile. An `Err` fails the process: its monitors are
/// told, a caller waiting for the answer gets `CallError::NoReply`, and its supervisor restarts
/// it as its restart type says. An `async fn` handler parks its process, not its worker, while
/// the future waits; the process handles its next message only after the future completes.
#[proc_macro_attribute]
pub fn handle(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::stray_role(attr::Role::Handle, args.into(), item.into()).into()
}

/// Marks the hook run before a process's first message, inside a `#[process]` impl block.
///
/// Accepted signatures (one such hook per process):
///
/// ```text
/// #[started] fn open(&mut self)
/// #[started] fn open(&mut self, ctx: &mut Ctx<Self>)
/// #[started] fn open(&mut self, ctx: &mut Ctx<Self>) -> Result<(), E>   // E: Into<Failure>
/// #[started] async fn open(&mut self, ...) -> ...                       // any of the above
/// ```
///
/// An `Err` fails the process before it handles anything (its monitors are told, its
/// supervisor restarts it as its restart type says).
///
/// An `async fn` hook may `.await` (an `ask` to another process, a timer) before the process
/// takes its first message: it is the process's first turn, and messages posted meanwhile wait
/// in the inbox. The process is parked while the hook waits, not its worker, as with an `async`
/// handler; the future moves between workers, so it must be `Send` (an `Rc` held across an
/// `.await` is refused, at the `async`). The start is done when the future completes: a
/// supervisor's synchronous start (`start_child`) answers then, and an `Err` or a panic fails
/// the process exactly as from a plain hook. `#[terminated]` cannot be `async`.
#[proc_macro_attribute]
pub fn started(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::stray_role(attr::Role::Started, args.into(), item.into()).into()
}

/// Marks the hook run once when a process terminates, inside a `#[process]` impl block.
///
/// Accepted signatures (one such hook per process; it cannot fail, nor be `async`: the process
/// is already terminating):
///
/// ```text
/// #[terminated] fn close(&mut self)
/// #[terminated] fn close(&mut self, reason: &ExitReason)
/// ```
///
/// It runs exactly once, whatever ended the process (a normal exit, a failure, a panic, a
/// supervisor's shutdown, the runtime's shutdown), the place to release sockets and files.
#[proc_macro_attribute]
pub fn terminated(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::stray_role(attr::Role::Terminated, args.into(), item.into()).into()
}
