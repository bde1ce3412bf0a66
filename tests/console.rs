//! The control plane's reads and pauses, with no capsule of its own
//! (`Limits::new`), against a real Redis and real capsules.

mod support;

use std::time::{Duration, Instant};

use limit_fetch_core::{keys, Capsule, Interrupt, LimitKind, Limits, Pause};
use redis::Commands;
use support::{capsule, push, queue, redis, settings};

fn fetch_all(capsule: &Capsule, queues: &[String]) -> Vec<String> {
    let none = Interrupt::new();
    std::iter::from_fn(|| capsule.fetch(queues, &none).unwrap())
        .map(|f| f.queue)
        .collect()
}

#[test]
fn a_paused_queue_is_skipped_and_keeps_its_limits() {
    let (paused, open) = (queue("paused"), queue("open"));
    push(&paused, 3);
    push(&open, 2);
    let a = capsule();
    let admin = Limits::new(&settings());
    let none = Interrupt::new();
    admin
        .set_limit(&paused, LimitKind::Global, Some(2), &none)
        .unwrap();
    admin.pause(&paused, None, &none).unwrap();
    let order = vec![paused.clone(), open.clone()];
    assert_eq!(fetch_all(&a, &order), vec![open.clone(), open.clone()]);
    assert_eq!(
        admin.limit(&paused, LimitKind::Global, &none).unwrap(),
        Some(2),
        "a pause keeps the limit"
    );
    let state = &admin.queue_states(&[&paused], &none).unwrap()[0];
    assert_eq!(state.pause, Pause::Indefinite);
    assert_eq!(state.queued, 3);

    assert!(admin.unpause(&paused, &none).unwrap());
    assert!(
        !admin.unpause(&paused, &none).unwrap(),
        "not paused any more"
    );
    assert_eq!(
        fetch_all(&a, &order),
        vec![paused.clone(), paused.clone()],
        "unpaused, under its limit of 2"
    );
}

#[test]
fn a_pause_for_a_time_ends_by_itself() {
    let q = queue("pause-for");
    push(&q, 1);
    let a = capsule();
    let admin = Limits::new(&settings());
    let none = Interrupt::new();
    admin
        .pause(&q, Some(Duration::from_millis(300)), &none)
        .unwrap();
    let started = Instant::now();
    match admin.queue_states(&[&q], &none).unwrap()[0].pause {
        Pause::For(left) => assert!(left <= Duration::from_millis(300) && !left.is_zero()),
        other => panic!("expected a pause with an end, got {other:?}"),
    }
    let queues = vec![q.clone()];
    assert!(fetch_all(&a, &queues).is_empty());
    while started.elapsed() < Duration::from_millis(350) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(fetch_all(&a, &queues), vec![q.clone()]);
    assert_eq!(
        admin.queue_states(&[&q], &none).unwrap()[0].pause,
        Pause::None
    );
    assert!(admin.pause(&q, Some(Duration::ZERO), &none).is_err());
}

#[test]
fn queue_states_count_busy_slots_per_capsule_in_one_read() {
    let q = queue("states");
    push(&q, 5);
    let (a, b) = (capsule(), capsule());
    let admin = Limits::new(&settings());
    let none = Interrupt::new();
    admin
        .set_limit(&q, LimitKind::Process, Some(2), &none)
        .unwrap();
    let queues = vec![q.clone()];
    assert_eq!(fetch_all(&a, &queues).len(), 2);
    assert_eq!(fetch_all(&b, &queues).len(), 2);
    let _: () = redis().set(keys::limit(&q), "oops").unwrap();
    let state = &admin.queue_states(&[&q], &none).unwrap()[0];
    assert_eq!(state.name, q);
    assert_eq!(
        state.limit,
        Some(0),
        "a broken limit reads as the fetch reads it"
    );
    assert_eq!(state.process_limit, Some(2));
    assert_eq!(state.queued, 1);
    assert_eq!(state.busy_total(), 4);
    let mut busy = state.busy.clone();
    busy.sort();
    let mut want = vec![(a.uuid().to_owned(), 2), (b.uuid().to_owned(), 2)];
    want.sort();
    assert_eq!(busy, want);
    assert!(admin
        .queue_states(&[] as &[&str], &none)
        .unwrap()
        .is_empty());
}

#[test]
fn known_queues_are_those_with_a_limit_a_pause_or_busy_slots() {
    let (limited, paused, busy, odd) = (
        queue("known-limit"),
        queue("known-paused"),
        queue("known-busy"),
        queue("known:odd:busy"),
    );
    let admin = Limits::new(&settings());
    let none = Interrupt::new();
    admin
        .set_limit(&limited, LimitKind::Process, Some(1), &none)
        .unwrap();
    admin.pause(&paused, None, &none).unwrap();
    push(&busy, 1);
    push(&odd, 1);
    let a = capsule();
    fetch_all(&a, &[busy.clone(), odd.clone()]);
    let known = admin.known_queues(&none).unwrap();
    for q in [&limited, &paused, &busy, &odd] {
        assert!(known.contains(q), "{q} missing from {known:?}");
    }
    assert!(
        known.windows(2).all(|w| w[0] < w[1]),
        "sorted, no duplicates"
    );
}

#[test]
fn capsules_say_who_they_are_until_reaped() {
    let a = capsule();
    a.describe(r#"{"identity":"host:1:abc"}"#.into());
    let none = Interrupt::new();
    a.register(&none).unwrap();
    let admin = Limits::new(&settings());
    let entry = admin
        .capsules(&none)
        .unwrap()
        .into_iter()
        .find(|c| c.uuid == a.uuid())
        .expect("registered");
    assert_eq!(entry.info.as_deref(), Some(r#"{"identity":"host:1:abc"}"#));
    let left = entry.heartbeat_left_ms.expect("alive");
    assert!(left <= a.heartbeat_ttl() * 1000 && left > 0);

    let _: () = redis().del(keys::heartbeat(a.uuid())).unwrap();
    let entry = admin
        .capsules(&none)
        .unwrap()
        .into_iter()
        .find(|c| c.uuid == a.uuid())
        .expect("registered until reaped");
    assert_eq!(entry.heartbeat_left_ms, None, "expired");

    a.deregister(&[] as &[&str], &none).unwrap();
    assert!(!admin
        .capsules(&none)
        .unwrap()
        .iter()
        .any(|c| c.uuid == a.uuid()));
    let info: bool = redis().exists(keys::capsule_info(a.uuid())).unwrap();
    assert!(
        !info,
        "deregistering deletes what the capsule said of itself"
    );
}
