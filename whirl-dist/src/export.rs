//! Making a local process reachable from other nodes: [`ExportBuilder`].
//!
//! A process is exported with the message types it accepts from the network, each by its
//! [`Remote`] tag. The export table maps the process's id to one entry per tag: a function
//! that decodes the payload as exactly that type and posts it (or asks it) through the
//! process's typed [`Addr`], so the receiving side keeps whirl's checks: the process handles
//! that type (`P: Handles<M>`), answers a request with its declared reply type
//! (`P: Answers<M, Reply = M::Reply>`), and the group's admission predicate decides as for a
//! local post.
//!
//! A frame for a tag the process did not export, or whose payload does not decode, is
//! bounced as [`Incompatible`](crate::BounceReason::Incompatible); for a process no longer
//! exported, as [`NoProcess`](crate::BounceReason::NoProcess). When a post finds the process
//! terminated, its export is removed.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Release};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use parking_lot::Mutex;
use whirl::request::{Deliver, Sender};
use whirl::{Addr, Answers, CallError, Handles, PostError, Process};

use crate::core::Core;
use crate::dispatch::{AskFn, Delivery, EncodeFn, Entry, Export, PostFn, Replier, RepostFn};
use crate::remote::{Remote, Request, TagOf};
use crate::wire::{self, BounceReason};
use crate::{DistError, Pid};

/// Builds the export of one process: which message types it accepts from other nodes.
/// Made by [`Node::export`](crate::Node::export).
///
/// ```no_run
/// # use serde::{Deserialize, Serialize};
/// # use whirl::prelude::*;
/// # use whirl_dist::{Node, NodeConfig, Remote, Request};
/// # #[derive(Message, Serialize, Deserialize)] struct Deposit(i64);
/// # impl Remote for Deposit { const TAG: &'static str = "bank.Deposit/1"; }
/// # #[derive(Message, Serialize, Deserialize)] struct Balance;
/// # impl Remote for Balance { const TAG: &'static str = "bank.Balance/1"; }
/// # impl Request for Balance { type Reply = i64; }
/// # #[process] struct Account { cents: i64 }
/// # #[process] impl Account {
/// #     #[handle] fn deposit(&mut self, Deposit(c): Deposit) { self.cents += c; }
/// #     #[handle] fn balance(&mut self, _: Balance) -> i64 { self.cents }
/// # }
/// # fn main() -> Result<(), whirl_dist::DistError> {
/// let runtime = Runtime::new();
/// let node = Node::start(NodeConfig::new("bank").tls("n.pem", "n.key", "ca.pem"))?;
/// let account = runtime.spawn(Account { cents: 0 });
/// let pid = node
///     .export(&account)
///     .accept::<Deposit>()
///     .answer::<Balance>()
///     .build()?;
/// println!("account reachable as {pid}");
/// # Ok(()) }
/// ```
#[must_use = "an export takes effect when built"]
pub struct ExportBuilder<'n, P: Process> {
    core: &'n Arc<Core>,
    addr: Addr<P>,
    entries: HashMap<u64, Entry>,
    names: Vec<&'static str>,
}

impl<'n, P: Process> ExportBuilder<'n, P> {
    pub(crate) fn new(core: &'n Arc<Core>, addr: &Addr<P>) -> Self {
        ExportBuilder {
            core,
            addr: addr.clone(),
            entries: HashMap::new(),
            names: Vec::new(),
        }
    }

    /// Accepts posts of `M` from other nodes.
    pub fn accept<M>(mut self) -> Self
    where
        M: Remote,
        P: Handles<M>,
    {
        let addr = self.addr.clone();
        self.names.push(M::TAG);
        self.entries.insert(
            TagOf::<M>::TAG,
            Entry {
                post: post_fn::<P, M>(addr),
                ask: None,
                encode: encode_fn::<M>(),
                repost: repost_fn::<P, M>(self.addr.clone()),
            },
        );
        self
    }

    /// Accepts asks (and posts) of `M` from other nodes; the handler's answer goes back to the
    /// asker serde-encoded.
    pub fn answer<M>(mut self) -> Self
    where
        M: Request,
        P: Answers<M, Reply = M::Reply>,
        M::Reply: whirl::Isolated,
    {
        self.names.push(M::TAG);
        let ask_addr = self.addr.clone();
        let ask: AskFn = Box::new(move |payload, principal, replier| {
            let Ok(msg) = wire::decode_payload::<M>(payload) else {
                return Delivery::Refused(BounceReason::Incompatible);
            };
            // The asking node's deadline governs: it answers its caller with a timeout.
            let request = ask_addr.request(msg).no_timeout();
            let request = match principal {
                Some(p) => request.on_behalf(p),
                None => request,
            };
            ReplyTask::start(request.ask(), replier)
        });
        self.entries.insert(
            TagOf::<M>::TAG,
            Entry {
                post: post_fn::<P, M>(self.addr.clone()),
                ask: Some(ask),
                encode: encode_fn::<M>(),
                repost: repost_fn::<P, M>(self.addr.clone()),
            },
        );
        self
    }

    /// Publishes the export; returns the process's cluster-wide [`Pid`]. Exporting a process
    /// again replaces its earlier entries.
    ///
    /// Fails with [`DistError::TagCollision`] if two different tag names of this node hash
    /// alike (rename one).
    pub fn build(self) -> Result<Pid, DistError> {
        for name in &self.names {
            self.core.claim_tag(name)?;
        }
        let local = self.addr.id().as_u64();
        let kill_addr = self.addr.clone();
        let export = self.core.install_export(
            local,
            Export {
                entries: self.entries,
                addr: Box::new(self.addr.clone()),
                kill: Box::new(move |reason| kill_addr.exit(reason)),
                watch: Mutex::new(None),
            },
        );
        let core = Arc::downgrade(self.core);
        let watch = self.addr.watch(move |down| {
            if let Some(core) = core.upgrade() {
                core.process_ended(local, &down.reason);
            }
        });
        *export.watch.lock() = Some(watch);
        Ok(Pid::new(self.core.id(), local))
    }
}

fn post_fn<P, M>(addr: Addr<P>) -> PostFn
where
    M: Remote,
    P: Handles<M>,
{
    Box::new(
        move |payload, principal| match wire::decode_payload::<M>(payload) {
            Err(_) => Delivery::Refused(BounceReason::Incompatible),
            Ok(msg) => match addr.deliver(msg, principal) {
                Ok(()) => Delivery::Delivered,
                Err(PostError::Rejected(_)) => Delivery::Refused(BounceReason::Rejected),
                Err(_) => Delivery::Refused(BounceReason::Terminated),
            },
        },
    )
}

/// Encodes a queued message of type `M` (a process's queue, when it moves).
fn encode_fn<M: Remote>() -> EncodeFn {
    Box::new(|queued| {
        queued
            .downcast_ref::<M>()
            .map(|msg| postcard::to_stdvec(msg))
    })
}

/// Posts a message of type `M` that moved with its process, without admission.
fn repost_fn<P, M>(addr: Addr<P>) -> RepostFn
where
    M: Remote,
    P: Handles<M>,
{
    Box::new(move |payload| match wire::decode_payload::<M>(payload) {
        Err(_) => Delivery::Refused(BounceReason::Incompatible),
        Ok(msg) => match addr.post_moved(msg) {
            Ok(()) => Delivery::Delivered,
            Err(_) => Delivery::Refused(BounceReason::Terminated),
        },
    })
}

type BoxedAsk<R, M> = Pin<Box<dyn Future<Output = Result<R, CallError<M>>> + Send>>;

/// Drives the local ask made for a remote one, and sends its end back. The first poll runs at
/// once (the post happens there, so a refusal is known synchronously and bounced with the
/// original bytes); later polls run in the waker, on whichever thread answers.
struct ReplyTask<R, M> {
    inner: Mutex<Option<(BoxedAsk<R, M>, Replier)>>,
    notified: AtomicBool,
}

impl<R, M> ReplyTask<R, M>
where
    R: serde::Serialize + Send + 'static,
    M: Send + 'static,
{
    fn start(
        ask: impl Future<Output = Result<R, CallError<M>>> + Send + 'static,
        replier: Replier,
    ) -> Delivery {
        let task = Arc::new(ReplyTask {
            inner: Mutex::new(None),
            notified: AtomicBool::new(false),
        });
        let mut ask: BoxedAsk<R, M> = Box::pin(ask);
        let waker = Waker::from(Arc::clone(&task));
        match ask.as_mut().poll(&mut Context::from_waker(&waker)) {
            Poll::Ready(Err(CallError::Post(PostError::Rejected(_)))) => {
                Delivery::Refused(BounceReason::Rejected)
            }
            Poll::Ready(Err(CallError::Post(_))) => Delivery::Refused(BounceReason::Terminated),
            Poll::Ready(end) => {
                finish(end, replier);
                Delivery::Delivered
            }
            Poll::Pending => {
                *task.inner.lock() = Some((ask, replier));
                // A wake that came before the future was stored found nothing to poll.
                if task.notified.swap(false, AcqRel) {
                    task.run();
                }
                Delivery::Delivered
            }
        }
    }

    /// Polls the stored future if no other thread is polling it; a wake that finds it busy
    /// leaves a note, and the poller polls again.
    fn run(self: &Arc<Self>) {
        loop {
            self.notified.store(true, Release);
            let Some(mut inner) = self.inner.try_lock() else {
                return;
            };
            self.notified.store(false, Release);
            let Some((ask, _)) = inner.as_mut() else {
                // Not stored yet (a wake during the first poll; `start` polls again when it
                // sees the note) or already finished (the note is harmless).
                self.notified.store(true, Release);
                return;
            };
            let waker = Waker::from(Arc::clone(self));
            if let Poll::Ready(end) = ask.as_mut().poll(&mut Context::from_waker(&waker)) {
                if let Some((_, replier)) = inner.take() {
                    drop(inner);
                    finish(end, replier);
                }
                return;
            }
            drop(inner);
            if !self.notified.load(Acquire) {
                return;
            }
        }
    }
}

impl<R, M> Wake for ReplyTask<R, M>
where
    R: serde::Serialize + Send + 'static,
    M: Send + 'static,
{
    fn wake(self: Arc<Self>) {
        self.run();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.run();
    }
}

fn finish<R: serde::Serialize, M>(end: Result<R, CallError<M>>, replier: Replier) {
    match end {
        Ok(answer) => replier.answer(&answer),
        Err(_) => replier.no_reply(),
    }
}
