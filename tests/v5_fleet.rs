//! Sharing a Redis with processes of sidekiq-limit_fetch v5 during a rolling
//! migration. v5's heartbeat, as its code has it: `SET <heartbeat> "1" EX
//! 4×period` and `SADD capsules <uuid>`, then a reap: every member of the
//! capsules set whose heartbeat does not read exactly "1" is dead, removed
//! from the set, its heartbeat deleted and its entries removed from the busy
//! lists of the queues the reaping process serves. Nothing else of a capsule
//! is known to v5.

mod support;

use limit_fetch_core::{keys, Capsule, Interrupt, LimitKind};
use redis::Commands;
use support::{capsule, push_unique, queue, redis};

/// Tests that beat (and so reap any registered capsule whose heartbeat is
/// missing) take turns.
static BEATING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// One reap of a v5 process serving `queues`, as v5 does it.
fn v5_reap(queues: &[&str]) -> Vec<String> {
    let mut conn = redis();
    let uuids: Vec<String> = conn.smembers(keys::CAPSULES).unwrap();
    let mut dead = Vec::new();
    for uuid in uuids {
        let value: Option<String> = conn.get(keys::heartbeat(&uuid)).unwrap();
        if value.as_deref() != Some("1") {
            dead.push(uuid);
        }
    }
    for uuid in &dead {
        let _: () = conn.srem(keys::CAPSULES, uuid).unwrap();
        let _: () = conn.del(keys::heartbeat(uuid)).unwrap();
        for q in queues {
            let _: () = conn.lrem(keys::busy(q), 0, uuid).unwrap();
        }
    }
    dead
}

fn busy(q: &str) -> Vec<String> {
    redis().lrange(keys::busy(q), 0, -1).unwrap()
}

fn fetch_all(capsule: &Capsule, q: &str) -> Vec<Vec<u8>> {
    let none = Interrupt::new();
    std::iter::from_fn(|| capsule.fetch(&[q], &none).unwrap())
        .map(|f| f.job)
        .collect()
}

#[test]
fn v5s_reaper_takes_a_live_capsule_of_this_gem_for_alive() {
    let _turn = BEATING.lock().unwrap_or_else(|e| e.into_inner());
    let q = queue("v5-alive");
    push_unique(&q, 2);
    let a = capsule();
    let none = Interrupt::new();
    a.register(&none).unwrap();
    a.beat(&none).unwrap();
    assert_eq!(fetch_all(&a, &q).len(), 2);
    let dead = v5_reap(&[&q]);
    assert!(!dead.contains(&a.uuid().to_owned()), "{dead:?}");
    assert_eq!(busy(&q), vec![a.uuid().to_owned(); 2]);
    a.deregister(&[q.as_str()], &none).unwrap();
}

#[test]
fn a_dead_capsule_that_v5_reaped_first_still_has_its_jobs_pushed_back() {
    let _turn = BEATING.lock().unwrap_or_else(|e| e.into_inner());
    let q = queue("v5-first");
    push_unique(&q, 3);
    let none = Interrupt::new();
    let victim = capsule();
    victim.register(&none).unwrap();
    victim
        .limits()
        .set_limit(&q, LimitKind::Global, Some(2), &none)
        .unwrap();
    let held = fetch_all(&victim, &q);
    assert_eq!(held.len(), 2);
    // Killed: its heartbeat expires, and a v5 process serving the queue
    // reaps it before any process of this gem does. v5 frees its slots and
    // forgets it; its in-progress jobs are this gem's to push back.
    support::expire(victim.uuid());
    assert_eq!(v5_reap(&[&q]), vec![victim.uuid().to_owned()]);
    assert!(busy(&q).is_empty());
    let reaper = capsule();
    reaper.register(&none).unwrap();
    let reaped = reaper.beat(&none).unwrap().reaped;
    let mine: Vec<_> = reaped.iter().filter(|r| r.uuid == victim.uuid()).collect();
    assert_eq!(mine.len(), 1, "{reaped:?}");
    assert_eq!((mine[0].freed, mine[0].requeued), (0, 2));
    assert!(!redis()
        .sismember::<_, _, bool>(keys::REGISTERED, victim.uuid())
        .unwrap());
    // Back in front of the queue, oldest first.
    assert_eq!(fetch_all(&reaper, &q), held);
    reaper.deregister(&[q.as_str()], &none).unwrap();
}

#[test]
fn a_live_capsule_whose_keys_v5_removed_gets_them_back_at_its_next_beat() {
    let _turn = BEATING.lock().unwrap_or_else(|e| e.into_inner());
    let q = queue("v5-repair");
    push_unique(&q, 2);
    let none = Interrupt::new();
    let a = capsule();
    a.register(&none).unwrap();
    let held = fetch_all(&a, &q);
    assert_eq!(held.len(), 2);
    // What a v5 reap does to a capsule it takes for dead (say, the process
    // of an older release of this gem wrote its process id there).
    let _: () = redis().set(keys::heartbeat(a.uuid()), "4242").unwrap();
    assert_eq!(v5_reap(&[&q]), vec![a.uuid().to_owned()]);
    assert!(busy(&q).is_empty());
    let report = a.beat(&none).unwrap();
    assert!(report.restored, "registered again");
    assert_eq!(
        report.corrected,
        vec![(keys::busy(&q), 0, 2)],
        "its slots booked again"
    );
    assert!(report.orphans.is_empty(), "its in-progress jobs untouched");
    let value: String = redis().get(keys::heartbeat(a.uuid())).unwrap();
    assert_eq!(value, "1");
    assert!(redis()
        .sismember::<_, _, bool>(keys::CAPSULES, a.uuid())
        .unwrap());
    let in_progress: Vec<Vec<u8>> = redis()
        .lrange(keys::in_progress(a.uuid(), &q), 0, -1)
        .unwrap();
    assert_eq!(in_progress.len(), 2);
    a.deregister(&[q.as_str()], &none).unwrap();
}

#[test]
fn a_v5_capsule_is_reaped_only_once_its_heartbeat_expired() {
    let _turn = BEATING.lock().unwrap_or_else(|e| e.into_inner());
    let q = queue("v5-dead");
    let none = Interrupt::new();
    let v5 = format!("v5-{}", uuid_like(&q));
    let mut conn = redis();
    let _: () = conn.set_ex(keys::heartbeat(&v5), "1", 60).unwrap();
    let _: () = conn.sadd(keys::CAPSULES, &v5).unwrap();
    let _: () = conn.rpush(keys::busy(&q), &v5).unwrap();
    let a = capsule();
    a.register(&none).unwrap();
    assert!(a.beat(&none).unwrap().reaped.iter().all(|r| r.uuid != v5));
    assert_eq!(busy(&q), vec![v5.clone()]);
    let _: () = conn.del(keys::heartbeat(&v5)).unwrap();
    // v5 writes no entry in keys::BEATS: the next census finds it.
    support::census_due();
    let reaped = a.beat(&none).unwrap().reaped;
    assert!(
        reaped.iter().any(|r| r.uuid == v5 && r.freed == 1),
        "{reaped:?}"
    );
    assert!(busy(&q).is_empty());
    a.deregister(&[q.as_str()], &none).unwrap();
}

fn uuid_like(q: &str) -> &str {
    q.rsplit('-').next().unwrap_or(q)
}
