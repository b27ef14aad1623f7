//! Handler panics, reported through `tracing` with the process, its group and the message
//! type, without a flood of backtraces when many handlers panic at once.
//!
//! A panic in a handler fails only its process (the turn catches it), but Rust's panic hook
//! runs first, on the panicking thread, and by default prints the message, and with
//! `RUST_BACKTRACE=1` a whole backtrace, for every panic: a storm of ten thousand failing
//! requests becomes ten thousand backtraces on stderr. The first runtime built installs a hook
//! that wraps whatever hook was installed before it:
//!
//! * a panic on a whirl worker, inside a turn, becomes one `tracing` error event with the
//!   process id, the group, the message type being handled, the panic's location and message;
//! * the previous hook (the default prints to stderr) still runs for the first
//!   five such panics, and then for at most one every ten seconds
//!   (`lifecycle/quiet.rs`); the panics it skips are
//!   counted, and the next one printed says how many were not;
//! * a panic anywhere else (user threads, the runtime's own threads outside a turn) goes to
//!   the previous hook unchanged.
//!
//! A program that installs its own hook after building its runtime replaces this one, as it
//! replaces any hook.

use std::panic::PanicHookInfo;
use std::sync::Once;
use std::time::Instant;

use parking_lot::Mutex;

use crate::group::current_turn;
use crate::lifecycle::quiet::{Limiter, Print};

static INSTALL: Once = Once::new();
static LIMITER: Mutex<Limiter> = Mutex::new(Limiter::new());

/// Installs the hook, once per program.
pub(crate) fn install() {
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| match current_turn() {
            None => previous(info),
            Some((running, group)) => {
                let message = payload_text(info);
                let location = info
                    .location()
                    .map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()));
                tracing::error!(
                    process = %running.process,
                    group = %group,
                    message_type = running.message.unwrap_or("unknown"),
                    location = location.as_deref().unwrap_or("unknown"),
                    panic = %message,
                    "handler panicked; its process fails"
                );
                let decision = LIMITER.lock().admit(Instant::now());
                if let Print::Yes { skipped } = decision {
                    if skipped > 0 {
                        eprintln!(
                            "whirl: {skipped} handler panics since the last one printed were not \
                             printed (each was reported through `tracing`)"
                        );
                    }
                    previous(info);
                }
            }
        }));
    });
}

/// The panic's message, when it is text.
fn payload_text(info: &PanicHookInfo<'_>) -> String {
    let payload = info.payload();
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".to_owned())
}
