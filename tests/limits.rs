//! Limits administration without a capsule: what a control plane (console,
//! CLI, web UI) builds on.

mod support;

use limit_fetch_core::{Interrupt, LimitKind, Limits};
use support::{capsule, push, queue, settings};

#[test]
fn limits_are_set_read_and_removed_without_a_capsule() {
    let q = queue("admin-set");
    let limits = Limits::new(&settings());
    let none = Interrupt::new();
    assert_eq!(limits.limit(&q, LimitKind::Global, &none).unwrap(), None);
    limits
        .set_limit(&q, LimitKind::Global, Some(3), &none)
        .unwrap();
    limits
        .set_limit(&q, LimitKind::Process, Some(1), &none)
        .unwrap();
    assert_eq!(limits.limit(&q, LimitKind::Global, &none).unwrap(), Some(3));
    let stored = limits.stored_limits(&[q.as_str()], &none).unwrap();
    let raw: Vec<_> = stored.iter().map(|s| (s.kind, s.raw.clone())).collect();
    assert_eq!(
        raw,
        [
            (LimitKind::Global, Some("3".to_owned())),
            (LimitKind::Process, Some("1".to_owned()))
        ]
    );
    limits
        .set_limit(&q, LimitKind::Global, None, &none)
        .unwrap();
    assert_eq!(limits.limit(&q, LimitKind::Global, &none).unwrap(), None);
}

#[test]
fn a_stored_limit_that_is_not_utf8_reads_as_zero_as_the_fetch_reads_it() {
    let q = queue("admin-bytes");
    let limits = Limits::new(&settings());
    let none = Interrupt::new();
    let _: () = redis::cmd("SET")
        .arg(LimitKind::Global.key(&q))
        .arg(&b"\xff5"[..])
        .query(&mut support::redis())
        .unwrap();
    assert_eq!(limits.limit(&q, LimitKind::Global, &none).unwrap(), Some(0));
    push(&q, 1);
    assert_eq!(capsule().fetch(&[q.as_str()], &none).unwrap(), None);
}

#[test]
fn default_limits_do_not_overwrite_stored_ones() {
    let (kept, set) = (queue("admin-kept"), queue("admin-default"));
    let limits = Limits::new(&settings());
    let none = Interrupt::new();
    limits
        .set_limit(&kept, LimitKind::Global, Some(5), &none)
        .unwrap();
    limits
        .set_default_limits(
            vec![
                (kept.clone(), LimitKind::Global, 1),
                (set.clone(), LimitKind::Global, 2),
            ],
            &none,
        )
        .unwrap();
    let read = |q: &str| limits.limit(q, LimitKind::Global, &none).unwrap();
    assert_eq!((read(&kept), read(&set)), (Some(5), Some(2)));
}

#[test]
fn busy_counts_a_capsules_slots_and_everyones() {
    let q = queue("admin-busy");
    push(&q, 2);
    let (a, b) = (capsule(), capsule());
    let none = Interrupt::new();
    a.fetch(&[q.as_str()], &none).unwrap().expect("a job");
    b.fetch(&[q.as_str()], &none).unwrap().expect("a job");
    let limits = Limits::new(&settings());
    assert_eq!(limits.busy(&q, a.uuid(), &none).unwrap(), (2, 1));
    assert_eq!(limits.busy(&q, "nobody", &none).unwrap(), (2, 0));
}
