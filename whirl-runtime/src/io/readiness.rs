//! A readiness event, as the poller hands it to a socket's callback.

/// What a readiness event says about a source.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Readiness {
    /// Reading may make progress.
    pub readable: bool,
    /// Writing may make progress.
    pub writable: bool,
    /// The peer will send nothing more.
    pub read_closed: bool,
    /// The peer will read nothing more.
    pub write_closed: bool,
    /// The source has an error (the next read or write reports it).
    pub error: bool,
}

impl Readiness {
    pub(crate) fn of(event: &mio::event::Event) -> Self {
        Readiness {
            readable: event.is_readable(),
            writable: event.is_writable(),
            read_closed: event.is_read_closed(),
            write_closed: event.is_write_closed(),
            error: event.is_error(),
        }
    }
}
