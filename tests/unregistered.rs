//! Slots held by capsules that are neither registered nor beating: a
//! capsule reaped while it was alive but stalled (a long GC pause, a
//! suspended VM, a starved heartbeat thread) that fetched again when it
//! resumed, then died before its next beat registered it. The reaper looks
//! at registered capsules only; a beat of a capsule serving the queue frees
//! them once the grace period is over, and leaves alone a capsule that comes
//! back in time.

mod support;

use std::thread;
use std::time::{Duration, Instant};

use limit_fetch_core::{keys, Capsule, Fetched, Interrupt, LimitKind, Reaped};
use redis::Commands;
use support::{capsule, capsule_with_period, push_unique, queue, redis};

/// Tests that beat (and so reap any registered capsule whose heartbeat is
/// missing) take turns.
static BEATING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A capsule that serves `q` and whose grace period is short: 2 s (its
/// heartbeat lives 1 s).
fn watcher(q: &str) -> Capsule {
    let watcher = capsule_with_period(Duration::from_millis(250));
    assert_eq!(watcher.grace(), 2);
    watcher.serve(&[q]);
    watcher.register(&Interrupt::new()).unwrap();
    watcher
}

fn fetch(capsule: &Capsule, q: &str) -> Option<Fetched> {
    capsule.fetch(&[q], &Interrupt::new()).unwrap()
}

fn busy(q: &str) -> Vec<String> {
    redis().lrange(keys::busy(q), 0, -1).unwrap()
}

fn in_progress(uuid: &str, q: &str) -> Vec<Vec<u8>> {
    redis().lrange(keys::in_progress(uuid, q), 0, -1).unwrap()
}

fn noted(uuid: &str) -> bool {
    redis().hexists(keys::UNREGISTERED, uuid).unwrap()
}

/// Makes `capsule` look stalled past its heartbeat's expiry.
fn stall(capsule: &Capsule) {
    support::expire(capsule.uuid());
}

/// What `watcher`'s beats reaped of `uuid` within `within`, beating every
/// 100 ms: none if it was left alone all along.
fn beat_for(watcher: &Capsule, uuid: &str, within: Duration) -> Vec<Reaped> {
    let none = Interrupt::new();
    let deadline = Instant::now() + within;
    let mut reaped = Vec::new();
    while Instant::now() < deadline {
        let report = watcher.beat(&none).unwrap();
        reaped.extend(report.reaped.into_iter().filter(|r| r.uuid == uuid));
        if !reaped.is_empty() {
            break;
        }
        thread::sleep(Duration::from_millis(100));
    }
    reaped
}

#[test]
fn a_capsule_reaped_while_stalled_that_fetched_and_died_unregistered_is_reaped_after_the_grace() {
    let _turn = BEATING.lock().unwrap_or_else(|e| e.into_inner());
    let q = queue("unregistered");
    push_unique(&q, 3);
    let none = Interrupt::new();
    let b = watcher(&q);
    b.limits()
        .set_limit(&q, LimitKind::Global, Some(2), &none)
        .unwrap();
    let victim = capsule();
    victim.register(&none).unwrap();
    let first = fetch(&victim, &q).expect("a job");

    // It stalls past its heartbeat's expiry: b's beat reaps it, pushing its
    // job back (that job may now run twice: at least once delivery).
    stall(&victim);
    let reaped = b.beat(&none).unwrap().reaped;
    assert!(
        reaped
            .iter()
            .any(|r| r.uuid == victim.uuid() && r.requeued == 1 && !r.unregistered),
        "{reaped:?}"
    );
    assert!(!redis()
        .sismember::<_, _, bool>(keys::CAPSULES, victim.uuid())
        .unwrap());

    // It resumes, fetches up to the limit, and is killed before its next
    // beat would have registered it again.
    let taken: Vec<Fetched> = std::iter::from_fn(|| fetch(&victim, &q)).collect();
    assert_eq!(taken.len(), 2);
    assert_eq!(
        taken[0].job, first.job,
        "the job pushed back is first in line"
    );
    let uuid = victim.uuid().to_owned();
    assert_eq!(busy(&q), vec![uuid.clone(), uuid.clone()]);
    assert_eq!(in_progress(&uuid, &q).len(), 2);
    assert!(
        fetch(&b, &q).is_none(),
        "the dead capsule's slots fill the limit"
    );

    // Nothing is touched within the grace: the beat notes it, and frees
    // nothing a capsule about to register again would need.
    let started = Instant::now();
    let early = b.beat(&none).unwrap();
    assert!(early.reaped.iter().all(|r| r.uuid != uuid), "{early:?}");
    assert!(noted(&uuid));
    assert_eq!(busy(&q).len(), 2);

    let reaped = beat_for(&b, &uuid, Duration::from_secs(5));
    let elapsed = started.elapsed();
    assert_eq!(reaped.len(), 1, "never reaped");
    let reaped = &reaped[0];
    assert!(reaped.unregistered);
    assert_eq!((reaped.freed, reaped.requeued), (2, 2));
    assert!(
        elapsed >= Duration::from_secs(1),
        "reaped {elapsed:?} after it was noted: before its grace (2 s, counted in whole seconds)"
    );
    assert!(busy(&q).is_empty());
    assert!(in_progress(&uuid, &q).is_empty());
    assert!(!noted(&uuid), "a reaped capsule's note goes with it");
    // Its jobs are back, oldest first, and the limit is whole again.
    let again: Vec<Fetched> = std::iter::from_fn(|| fetch(&b, &q)).collect();
    assert_eq!(
        again.iter().map(|f| f.job.clone()).collect::<Vec<_>>(),
        taken.iter().map(|f| f.job.clone()).collect::<Vec<_>>()
    );
    assert_eq!(b.limits().busy(&q, b.uuid(), &none).unwrap(), (2, 2));
}

#[test]
fn a_live_capsule_reaped_by_mistake_that_registers_again_within_the_grace_keeps_what_it_holds() {
    let _turn = BEATING.lock().unwrap_or_else(|e| e.into_inner());
    let q = queue("comes-back");
    push_unique(&q, 3);
    let none = Interrupt::new();
    let b = watcher(&q);
    let live = capsule();
    live.register(&none).unwrap();
    let first = fetch(&live, &q).expect("a job");
    stall(&live);
    assert!(b
        .beat(&none)
        .unwrap()
        .reaped
        .iter()
        .any(|r| r.uuid == live.uuid()));

    // It resumes: a fetch, then its heartbeat beats (within one period).
    let second = fetch(&live, &q).expect("a job");
    assert!(b.beat(&none).unwrap().reaped.is_empty());
    assert!(noted(live.uuid()), "found holding a slot unregistered");
    assert!(live.beat(&none).unwrap().restored);
    assert!(!noted(live.uuid()), "registering ends the note");

    // Long past the grace, nothing of it was taken: the beat booked again
    // the job the reaper had pushed back (it still runs it), in its busy
    // and in-progress lists, beside the job it fetched since.
    let reaped = beat_for(&b, live.uuid(), Duration::from_secs(4));
    assert!(reaped.is_empty(), "{reaped:?}");
    assert_eq!(busy(&q), vec![live.uuid().to_owned(); 2]);
    assert_eq!(
        in_progress(live.uuid(), &q),
        vec![first.job.clone(), second.job.clone()]
    );
    // Each acknowledgement frees its slot, once.
    live.acknowledge(&q, second.job);
    live.flush(&none).unwrap();
    assert_eq!(busy(&q), vec![live.uuid().to_owned()]);
    live.acknowledge(&q, first.job);
    live.flush(&none).unwrap();
    assert_eq!(in_progress(live.uuid(), &q), Vec::<Vec<u8>>::new());
    assert!(busy(&q).is_empty());
    assert!(live.beat(&none).unwrap().corrected.is_empty());
    live.deregister(&[q.as_str()], &none).unwrap();
}

#[test]
fn a_beat_leaves_alone_registered_capsules_and_notes_nothing_of_them() {
    let _turn = BEATING.lock().unwrap_or_else(|e| e.into_inner());
    let q = queue("registered");
    push_unique(&q, 2);
    let none = Interrupt::new();
    let b = watcher(&q);
    let other = capsule();
    other.register(&none).unwrap();
    let held = fetch(&other, &q).expect("a job");
    let alive: String = redis().get(keys::heartbeat(other.uuid())).unwrap();
    assert_eq!(alive, "1", "what v5's reaper takes for alive");
    // A v5 process's capsule: registered, a "1" heartbeat, its own entry.
    let mut conn = redis();
    let _: () = conn.sadd(keys::CAPSULES, "v5-capsule").unwrap();
    let _: () = conn.set_ex(keys::heartbeat("v5-capsule"), "1", 60).unwrap();
    let _: () = conn.rpush(keys::busy(&q), "v5-capsule").unwrap();
    let reaped = beat_for(&b, other.uuid(), Duration::from_secs(3));
    assert!(reaped.is_empty(), "{reaped:?}");
    assert!(!noted(other.uuid()) && !noted("v5-capsule"));
    assert_eq!(busy(&q).len(), 2);
    assert_eq!(in_progress(other.uuid(), &q), vec![held.job]);
    let _: () = conn.del(keys::heartbeat("v5-capsule")).unwrap();
    let _: () = conn.srem(keys::CAPSULES, "v5-capsule").unwrap();
    let _: () = conn.lrem(keys::busy(&q), 0, "v5-capsule").unwrap();
    other.deregister(&[q.as_str()], &none).unwrap();
}

/// Redis's clock, in seconds.
fn redis_now() -> i64 {
    let (secs, _): (i64, i64) = redis::cmd("TIME").query(&mut redis()).unwrap();
    secs
}

#[test]
fn a_capsule_noted_by_others_is_left_to_a_process_serving_its_queues_until_twice_the_grace() {
    let _turn = BEATING.lock().unwrap_or_else(|e| e.into_inner());
    let (elsewhere, served) = (queue("elsewhere"), queue("served"));
    let b = watcher(&served);
    let none = Interrupt::new();
    // A capsule that holds a slot and a job of a queue b does not serve,
    // noted unregistered by a process that serves it.
    push_unique(&elsewhere, 1);
    let dead = capsule();
    fetch(&dead, &elsewhere).expect("a job");
    let uuid = dead.uuid().to_owned();
    let note = |age: i64| {
        let _: () = redis()
            .hset(keys::UNREGISTERED, &uuid, redis_now() - age)
            .unwrap();
    };
    // At the grace (2 s), short of twice it: the serving process's turn. Ages
    // are whole seconds of Redis's clock, so a note 3 s old was 4 s old to a
    // beat that read the clock past the next second.
    note(2);
    let report = b.beat(&none).unwrap();
    assert!(report.reaped.iter().all(|r| r.uuid != uuid), "{report:?}");
    assert_eq!(busy(&elsewhere), vec![uuid.clone()]);
    note(5); // nobody serving its queues reaped it: b does
    let reaped = b.beat(&none).unwrap().reaped;
    let mine: Vec<_> = reaped.iter().filter(|r| r.uuid == uuid).collect();
    assert_eq!(mine.len(), 1, "{reaped:?}");
    assert_eq!((mine[0].freed, mine[0].requeued), (1, 1));
    assert!(busy(&elsewhere).is_empty() && !noted(&uuid));
}

#[test]
fn a_dead_capsules_queue_set_that_holds_nothing_goes_and_one_that_holds_a_job_is_noted() {
    let _turn = BEATING.lock().unwrap_or_else(|e| e.into_inner());
    let q = queue("stray-set");
    let none = Interrupt::new();
    let mut conn = redis();
    // Reaped while frozen, it woke, fetched (its set written again),
    // acknowledged, and was killed before its next beat: nothing of it is
    // left but its set.
    let stray = format!("stray-{}", uuid::Uuid::new_v4());
    let _: () = conn.sadd(keys::capsule_queues(&stray), &q).unwrap();
    // The same, killed while it still ran a job: its set means something.
    let holder = format!("holder-{}", uuid::Uuid::new_v4());
    let _: () = conn.sadd(keys::capsule_queues(&holder), &q).unwrap();
    let _: () = conn
        .lpush(keys::in_progress(&holder, &q), r#"{"jid":"held"}"#)
        .unwrap();
    // A live capsule with a set and nothing in progress now.
    let live = capsule();
    live.register(&none).unwrap();
    let _: () = conn.sadd(keys::capsule_queues(live.uuid()), &q).unwrap();

    let beater = capsule();
    beater.register(&none).unwrap();
    let exists = |key: String| -> bool { redis().exists(key).unwrap() };
    // Other beats' census this period: no look yet.
    let _: () = conn.set_ex(keys::CENSUS, "another capsule", 600).unwrap();
    beater.beat(&none).unwrap();
    assert!(exists(keys::capsule_queues(&stray)), "no census, no look");

    // The census's walk meets them (it may take a few of its steps).
    let mut beats = 0;
    while exists(keys::capsule_queues(&stray)) && beats < 20 {
        support::census_due();
        beater.beat(&none).unwrap();
        beats += 1;
    }
    assert!(!exists(keys::capsule_queues(&stray)), "the empty stray set");
    assert!(!noted(&stray));
    assert!(exists(keys::capsule_queues(&holder)), "left for its reap");
    assert!(noted(&holder), "noted, to be reaped after the grace");
    assert!(
        exists(keys::capsule_queues(live.uuid())),
        "a live capsule's"
    );
    assert!(!noted(live.uuid()));

    let _: () = conn.del(keys::capsule_queues(&holder)).unwrap();
    let _: () = conn.del(keys::in_progress(&holder, &q)).unwrap();
    let _: () = conn.hdel(keys::UNREGISTERED, &holder).unwrap();
    live.deregister(&[q.as_str()], &none).unwrap();
    beater.deregister(&[] as &[&str], &none).unwrap();
}
