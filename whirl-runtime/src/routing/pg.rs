//! Process groups for publish/subscribe: Erlang's `pg`, typed.
//!
//! A runtime has one [`ProcessGroups`] table ([`Runtime::process_groups`](crate::Runtime),
//! [`Ctx::process_groups`]). A group is named by a string *and* the message type its members
//! take: [`ProcessGroups::group::<M>("name")`](ProcessGroups::group) is a [`ProcessGroup<M>`]
//! whose members are any processes that handle `M`, of any type. Processes join and leave;
//! [`ProcessGroup::post_all`] posts a clone of a message to every member. A member that ends
//! leaves by itself: joining watches it ([`Addr::watch`]), and the watch's callback, run where
//! the process ends, takes it out of the table.
//!
//! Where it differs from Erlang's `pg`: a process is in a group at most once (joining twice
//! does nothing; Erlang counts joins), and the table is local to the runtime (whirl-dist has
//! the cluster-wide registry).

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

use crate::isolation::{Isolated, Message};
use crate::lifecycle::ProcessId;
use crate::process::{Addr, Ctx, Handles, PostError, Process, Recipient, Sender, Watch};

/// One member: where to post, and the watch that removes it when it ends.
struct Member<M> {
    id: ProcessId,
    recipient: Recipient<M>,
    /// `None` until the watch is set (just after the member is added).
    watch: Option<Watch>,
}

/// The members of one group, erased to `Any` in the table: a `Vec<Member<M>>`.
type Members = Box<dyn Any + Send>;

#[derive(Default)]
struct Table {
    groups: HashMap<(String, TypeId), (&'static str, Members)>,
}

impl Table {
    fn members_mut<M: Message>(&mut self, name: &str) -> Option<&mut Vec<Member<M>>> {
        self.groups
            .get_mut(&(name.to_owned(), TypeId::of::<M>()))
            .and_then(|(_, members)| members.downcast_mut::<Vec<Member<M>>>())
    }

    /// Removes `id` from group `name`; drops the group once it is empty. Returns the member.
    fn remove<M: Message>(&mut self, name: &str, id: ProcessId) -> Option<Member<M>> {
        let members = self.members_mut::<M>(name)?;
        let at = members.iter().position(|m| m.id == id)?;
        let member = members.remove(at);
        if members.is_empty() {
            self.groups.remove(&(name.to_owned(), TypeId::of::<M>()));
        }
        Some(member)
    }
}

/// The process-group table of a runtime: named groups of processes, for publish/subscribe.
///
/// Cheap to clone; [`Isolated`], so processes keep it in their state. Get the runtime's with
/// [`Runtime::process_groups`](crate::Runtime) (or [`Ctx::process_groups`] in a handler), or
/// make a private one with [`ProcessGroups::default`].
///
/// ```
/// use whirl::prelude::*;
///
/// #[derive(Message, Clone)]
/// struct News(String);
///
/// #[process]
/// struct Reader { seen: Vec<String> }
/// #[process]
/// impl Reader {
///     #[handle]
///     fn news(&mut self, News(text): News) {
///         self.seen.push(text);
///     }
/// }
///
/// let rt = Runtime::new();
/// let sports = rt.process_groups().group::<News>("sports");
/// let alice = rt.spawn(Reader { seen: vec![] });
/// let bob = rt.spawn(Reader { seen: vec![] });
/// sports.join(&alice);
/// sports.join(&bob);
/// assert_eq!(sports.post_all(News("goal".into())).delivered, 2);
/// sports.leave(&bob);
/// assert_eq!(sports.len(), 1);
/// rt.shutdown_graceful();
/// ```
#[derive(Clone, Default)]
pub struct ProcessGroups {
    table: Arc<Mutex<Table>>,
}

impl ProcessGroups {
    /// The group `name` of processes that take `M`. Groups of different message types are
    /// different groups, even under one name.
    pub fn group<M: Message>(&self, name: impl Into<String>) -> ProcessGroup<M> {
        ProcessGroup {
            table: Arc::clone(&self.table),
            name: Arc::from(name.into()),
            _message: std::marker::PhantomData,
        }
    }

    /// The groups that have members now: their names and message types.
    pub fn which_groups(&self) -> Vec<(String, &'static str)> {
        let table = self.table.lock();
        let mut names: Vec<_> = table
            .groups
            .iter()
            .map(|((name, _), (type_name, _))| (name.clone(), *type_name))
            .collect();
        names.sort();
        names
    }
}

impl fmt::Debug for ProcessGroups {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProcessGroups")
            .field("groups", &self.table.lock().groups.len())
            .finish()
    }
}

/// One named group of processes that take `M` ([`ProcessGroups::group`]).
pub struct ProcessGroup<M: Message> {
    table: Arc<Mutex<Table>>,
    name: Arc<str>,
    _message: std::marker::PhantomData<fn(M)>,
}

impl<M: Message> ProcessGroup<M> {
    /// The group's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Adds `member`; returns `false` if it was a member already, or has ended (an ended
    /// process is never added). It leaves by itself when it ends.
    pub fn join<P: Handles<M>>(&self, member: &Addr<P>) -> bool {
        if member.is_terminated() {
            return false;
        }
        let id = member.id();
        {
            let mut table = self.table.lock();
            let key = (self.name.to_string(), TypeId::of::<M>());
            let (_, members) = table.groups.entry(key).or_insert_with(|| {
                let empty: Vec<Member<M>> = Vec::new();
                (std::any::type_name::<M>(), Box::new(empty))
            });
            let Some(members) = members.downcast_mut::<Vec<Member<M>>>() else {
                return false;
            };
            if members.iter().any(|m| m.id == id) {
                return false;
            }
            members.push(Member {
                id,
                recipient: member.recipient(),
                watch: None,
            });
        }
        // Watched outside the lock: the callback runs at once, here, if the process has ended
        // meanwhile, and takes the lock to remove it.
        let table: Weak<Mutex<Table>> = Arc::downgrade(&self.table);
        let name = Arc::clone(&self.name);
        let watch = member.watch(move |down| {
            if let Some(table) = table.upgrade() {
                let removed = table.lock().remove::<M>(&name, down.id);
                // Dropped outside the lock: dropping a watch takes the process's own lock.
                drop(removed);
            }
        });
        let mut table = self.table.lock();
        if let Some(entry) = table
            .members_mut::<M>(&self.name)
            .and_then(|members| members.iter_mut().find(|m| m.id == id))
        {
            entry.watch = Some(watch);
            return true;
        }
        // It ended (or left) between the two locks.
        drop(table);
        drop(watch);
        true
    }

    /// Removes `member`; returns whether it was a member.
    pub fn leave<P: Process>(&self, member: &Addr<P>) -> bool {
        self.leave_id(member.id())
    }

    /// Removes the member with process id `id`; returns whether it was a member.
    pub fn leave_id(&self, id: ProcessId) -> bool {
        let removed = self.table.lock().remove::<M>(&self.name, id);
        removed.is_some()
    }

    /// The members now, in the order they joined.
    pub fn members(&self) -> Vec<Recipient<M>> {
        let mut table = self.table.lock();
        table
            .members_mut::<M>(&self.name)
            .map(|members| members.iter().map(|m| m.recipient.clone()).collect())
            .unwrap_or_default()
    }

    /// The members' process ids, in the order they joined.
    pub fn member_ids(&self) -> Vec<ProcessId> {
        let mut table = self.table.lock();
        table
            .members_mut::<M>(&self.name)
            .map(|members| members.iter().map(|m| m.id).collect())
            .unwrap_or_default()
    }

    /// How many members the group has now.
    pub fn len(&self) -> usize {
        let mut table = self.table.lock();
        table.members_mut::<M>(&self.name).map_or(0, |m| m.len())
    }

    /// Whether the group has no members now.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Posts a clone of `msg` to every member (the original to the last), each with
    /// [`Addr::post`]'s guarantees. A member that has ended is taken out of the group; what
    /// could not be delivered comes back in the report, with the member it was for.
    pub fn post_all(&self, msg: M) -> PostAllReport<M>
    where
        M: Clone,
    {
        let members = self.members();
        let mut report = PostAllReport {
            delivered: 0,
            failed: Vec::new(),
        };
        let Some((last, rest)) = members.split_last() else {
            report.failed.push((None, PostError::Terminated(msg)));
            return report;
        };
        let mut send = |to: &Recipient<M>, msg: M| match to.post(msg) {
            Ok(()) => report.delivered += 1,
            Err(e) => {
                if e.is_terminated() {
                    self.leave_id(to.id());
                }
                report.failed.push((Some(to.id()), e));
            }
        };
        for to in rest {
            send(to, msg.clone());
        }
        send(last, msg);
        report
    }
}

impl<M: Message> Clone for ProcessGroup<M> {
    fn clone(&self) -> Self {
        ProcessGroup {
            table: Arc::clone(&self.table),
            name: Arc::clone(&self.name),
            _message: std::marker::PhantomData,
        }
    }
}

impl<M: Message> fmt::Debug for ProcessGroup<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProcessGroup")
            .field("name", &self.name)
            .field("message", &std::any::type_name::<M>())
            .field("members", &self.len())
            .finish()
    }
}

/// What [`ProcessGroup::post_all`] did.
#[derive(Debug)]
#[non_exhaustive]
pub struct PostAllReport<M> {
    /// Members that took their copy.
    pub delivered: usize,
    /// The copies that were not delivered, with the member each was for (`None`: the group
    /// had no members, and the message comes back).
    pub failed: Vec<(Option<ProcessId>, PostError<M>)>,
}

// SAFETY: the table holds process addresses (`Recipient`s) and watch handles behind its own
// lock: the runtime's bookkeeping, like an `Addr`, never a process's state. (I8)
unsafe impl Isolated for ProcessGroups {}
// SAFETY: as above: a handle on the same table and a name. (I8)
unsafe impl<M: Message> Isolated for ProcessGroup<M> {}

impl<P: Process> Ctx<P> {
    /// The runtime's process groups ([`ProcessGroups`]).
    pub fn process_groups(&self) -> ProcessGroups {
        ProcessGroups::of_runtime(&self.group())
    }
}

impl ProcessGroups {
    /// The process-group table of the runtime `group` belongs to.
    pub(crate) fn of_runtime(group: &crate::Group) -> ProcessGroups {
        let table = group.shared().kernel.extension::<RuntimeTable>();
        ProcessGroups {
            table: Arc::clone(&table.0),
        }
    }
}

/// The runtime's table, as the kernel keeps it.
#[derive(Default)]
struct RuntimeTable(Arc<Mutex<Table>>);
