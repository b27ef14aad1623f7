//! Groups and principals: processes run on their group's workers; a child spawned with
//! `Ctx::spawn` inherits its parent's group and principal (a spawner's `group` changes the group,
//! its `principal` the principal); predicates see the destination's principal.

mod common;

use common::{events, run, Plain};
use whirl_runtime::admission::Offer;
use whirl_runtime::{Addr, PostError, Principal, Runtime};

/// Where a process runs and whom it serves, as seen from inside its handler.
#[derive(Debug)]
struct Placement {
    group: String,
    thread: String,
    principal: Option<Principal>,
}
// SAFETY: owned strings and a `Principal` (an isolated runtime value).
unsafe impl whirl_runtime::Isolated for Placement {}

fn placement(p: &Addr<Plain>) -> Placement {
    run(p, |_, ctx| Placement {
        group: ctx.group().name().to_owned(),
        thread: std::thread::current().name().unwrap_or("").to_owned(),
        principal: ctx.principal().cloned(),
    })
}

#[track_caller]
fn assert_serves(p: &Placement, principal: &Principal) {
    let actual = p.principal.as_ref().expect("a principal");
    assert!(actual.same_as(principal), "{actual:?} is not {principal:?}");
}

#[test]
fn groups_are_configured_as_built() {
    let rt = Runtime::builder()
        .threads(2)
        .budget(9)
        .build()
        .expect("the runtime starts");
    let default = rt.default_group();
    assert_eq!(default.name(), "default");
    assert_eq!(default.threads(), 2);
    assert_eq!(default.budget(), 9);
    let web = rt
        .group("web")
        .threads(3)
        .budget(5)
        .build()
        .expect("build group");
    assert_eq!(web.name(), "web");
    assert_eq!(web.threads(), 3);
    assert_eq!(web.budget(), 5);
    let tiny = rt
        .group("tiny")
        .threads(0)
        .budget(0)
        .build()
        .expect("build group");
    assert_eq!(
        (tiny.threads(), tiny.budget()),
        (1, 1),
        "at least one of each"
    );
    rt.shutdown_graceful();
}

#[test]
fn a_process_runs_on_the_shared_workers_or_its_dedicated_groups_threads() {
    let rt = Runtime::builder()
        .threads(2)
        .build()
        .expect("the runtime starts");
    let web = rt.group("web").threads(2).build().expect("build group");
    let (tx, _ev) = events();
    let in_default = rt.spawn(Plain::new("d", &tx));
    let in_web = rt.spawner().group(&web).spawn(Plain::new("w", &tx));
    for _ in 0..20 {
        let d = placement(&in_default);
        assert_eq!(d.group, "default");
        // The default group runs on the runtime's shared workers; `web` owns its threads.
        assert!(d.thread.starts_with("whirl-worker-"), "{}", d.thread);
        assert!(d.principal.is_none());
        let w = placement(&in_web);
        assert_eq!(w.group, "web");
        assert!(w.thread.starts_with("whirl-web"), "{}", w.thread);
    }
    rt.shutdown_graceful();
}

#[test]
fn a_spawned_child_inherits_group_and_principal() {
    let rt = Runtime::builder()
        .threads(2)
        .build()
        .expect("the runtime starts");
    let web = rt.group("web").threads(1).build().expect("build group");
    let db = rt.group("db").threads(1).build().expect("build group");
    let (tx, _ev) = events();
    let session = Principal::builder(42)
        .priority(7)
        .class(3)
        .build()
        .expect("a valid principal");
    let parent = rt
        .spawner()
        .group(&web)
        .principal(session.clone())
        .spawn(Plain::new("parent", &tx));
    let p = placement(&parent);
    assert_eq!(p.group, "web");
    assert_serves(&p, &session);

    // `spawn`: same group, same principal.
    let tx2 = tx.clone();
    let child = run(&parent, move |_, ctx| ctx.spawn(Plain::new("child", &tx2)));
    let c = placement(&child);
    assert_eq!(c.group, "web");
    assert!(c.thread.starts_with("whirl-web"), "{}", c.thread);
    assert_serves(&c, &session);

    // ...and on down the tree.
    let tx2 = tx.clone();
    let grandchild = run(&child, move |_, ctx| {
        ctx.spawn(Plain::new("grandchild", &tx2))
    });
    let g = placement(&grandchild);
    assert_eq!(g.group, "web");
    assert_serves(&g, &session);

    // `spawner().group(..)`: another group, same principal.
    let tx2 = tx.clone();
    let db2 = db.clone();
    let query = run(&parent, move |_, ctx| {
        ctx.spawner().group(&db2).spawn(Plain::new("query", &tx2))
    });
    let q = placement(&query);
    assert_eq!(q.group, "db");
    assert!(q.thread.starts_with("whirl-db"), "{}", q.thread);
    assert_serves(&q, &session);

    // `spawner().principal(..)`: a principal of its own.
    let admin = Principal::builder(1)
        .priority(255)
        .build()
        .expect("a valid principal");
    let (tx2, admin2, db2) = (tx.clone(), admin.clone(), db.clone());
    let audit = run(&parent, move |_, ctx| {
        ctx.spawner()
            .group(&db2)
            .principal(admin2)
            .spawn(Plain::new("audit", &tx2))
    });
    let a = placement(&audit);
    assert_eq!(a.group, "db");
    assert_serves(&a, &admin);
    assert!(!a.principal.unwrap().same_as(&session));

    // A child of a process without a principal has none.
    let loner = rt.spawn(Plain::new("loner", &tx));
    let tx2 = tx.clone();
    let loners_child = run(&loner, move |_, ctx| ctx.spawn(Plain::new("lc", &tx2)));
    let l = placement(&loners_child);
    assert_eq!(l.group, "default");
    assert!(l.principal.is_none());

    rt.block_until_idle();
    assert_eq!(web.counts().spawned, 3);
    assert_eq!(db.counts().spawned, 2);
    rt.shutdown_graceful();
}

#[test]
fn principals_carry_their_attributes() {
    let p = Principal::builder(42)
        .priority(7)
        .class(3)
        .build()
        .expect("a valid principal");
    assert_eq!((p.id(), p.priority(), p.class()), (42, 7, 3));
    assert!(p.same_as(&p.clone()));
    assert!(
        !p.same_as(
            &Principal::builder(42)
                .priority(7)
                .class(3)
                .build()
                .expect("a valid principal")
        ),
        "identity, not equal fields"
    );
}

#[test]
fn a_predicate_sees_the_destinations_principal() {
    // Shed everything for low-priority principals, and for processes without one.
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let shedding = rt
        .group("shedding")
        .threads(1)
        .predicate(|offer: &Offer<'_>| offer.principal().is_some_and(|p| p.priority() >= 5))
        .build()
        .expect("build group");
    let (tx, _ev) = events();
    let vip = rt
        .spawner()
        .group(&shedding)
        .principal(
            Principal::builder(1)
                .priority(9)
                .build()
                .expect("a valid principal"),
        )
        .spawn(Plain::new("vip", &tx));
    let guest = rt
        .spawner()
        .group(&shedding)
        .principal(
            Principal::builder(2)
                .priority(1)
                .build()
                .expect("a valid principal"),
        )
        .spawn(Plain::new("guest", &tx));
    let anonymous = rt
        .spawner()
        .group(&shedding)
        .spawn(Plain::new("anonymous", &tx));
    assert_eq!(run(&vip, |n, _| n.name), "vip");
    for p in [&guest, &anonymous] {
        assert!(matches!(
            common::post_job(p, |_, _| Ok(())),
            Err(PostError::Rejected(_))
        ));
    }
    // A child of the VIP inherits the principal, and with it the admission.
    let tx2 = tx.clone();
    let helper = run(&vip, move |_, ctx| ctx.spawn(Plain::new("helper", &tx2)));
    assert_eq!(run(&helper, |n, _| n.name), "helper");
    rt.block_until_idle();
    let counts = shedding.counts();
    common::assert_balanced(&counts);
    assert_eq!(counts.rejected, 2);
    rt.shutdown_graceful();
}
