//! A connection's part in the drain (`server/drain.rs` runs it and states its rules): from
//! [`Drain::Begin`] on, every answer closes the connection, and a connection with nothing to
//! answer closes once quiet for `Site::drain_grace` (`IDLE_GRACE` unless a test says); at [`Drain::Deadline`], what it still owes an
//! answer is answered 503 with `Retry-After`, and it closes.

use std::time::Duration;

use whirl::net::SocketMsg;
use whirl::prelude::*;
use whirl_http::Response;

use super::record::{Requested, Served};
use super::HttpConnection;
use crate::ops::Phase;
use crate::server::drain::{Drain, CONNECTIONS};
use crate::server::site::RETRY_AFTER_SECS;

impl HttpConnection {
    /// Joins the connections a drain tells; drains at once if one has begun (the phase is
    /// read after joining, so that a drain is never missed between the two).
    pub(super) fn join_drain(&mut self, ctx: &mut Ctx<Self>) {
        ctx.process_groups()
            .group::<Drain>(CONNECTIONS)
            .join(&ctx.myself());
        match self.site.ops.phase() {
            Phase::Serving => {}
            Phase::Draining => self.on_drain(Drain::Begin, ctx),
            Phase::Deadline => self.on_drain(Drain::Deadline, ctx),
        }
    }

    pub(super) fn on_drain(&mut self, drain: Drain, ctx: &mut Ctx<Self>) {
        match drain {
            Drain::Begin => self.start_draining(ctx),
            Drain::Deadline => {
                self.start_draining(ctx);
                self.at_deadline();
            }
        }
    }

    /// How long the connection may stay quiet with nothing to answer.
    pub(super) fn idle_limit(&self) -> Duration {
        match self.draining {
            true => self.site.idle_timeout.min(self.site.drain_grace),
            false => self.site.idle_timeout,
        }
    }

    fn start_draining(&mut self, ctx: &mut Ctx<Self>) {
        if self.draining {
            return;
        }
        self.draining = true;
        if let Some(timer) = self.idle_timer.take() {
            timer.cancel();
        }
        // Closes the connection if it has been quiet long enough, else looks again sooner
        // than it did (`idle_limit` is shorter now).
        self.check_idle(ctx);
    }

    /// Answers 503 what the connection owes an answer, and closes it.
    fn at_deadline(&mut self) {
        if self.closing {
            return;
        }
        let refusal = Response::service_unavailable(RETRY_AFTER_SECS).closing();
        // The first request not answered yet (those answered before it have been written):
        // its 503 closes the connection, and the rest are not answered.
        if let Some(seq) = self.in_flight.front().map(|pending| pending.seq) {
            self.answer(seq, refusal);
            return;
        }
        let owed = !self.waiting.is_empty()
            || self.resolving
            || self.partial_since.is_some()
            || self.broken.is_some();
        if owed {
            let requested = match self.waiting.front() {
                Some(request) => self.requested(request),
                None => Requested::none(),
            };
            let seq = self.enqueue(false, false, None, (requested, Served::default()));
            self.answer(seq, refusal);
            return;
        }
        self.closing = true;
        let _ = self.socket.post(SocketMsg::Close);
    }
}
