//! The core against a real Redis, with no Ruby.

mod support;

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use limit_fetch_core::{keys, Capsule, CapsuleOptions, Fetched, Interrupt, LimitKind, Wait};
use redis::Commands;
use support::{capsule, capsule_with_period, push, queue, redis};

/// Tests that beat (and so reap any capsule whose heartbeat is missing) take
/// turns, so that the reaping test sees its own dead capsule reaped by its own
/// reapers.
static BEATING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Tests that pause Redis (CLIENT PAUSE) take turns.
static PAUSING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Stalls every client of the test Redis for `ms` milliseconds.
fn pause_redis(ms: u64) {
    let _: () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(ms)
        .arg("ALL")
        .query(&mut redis())
        .unwrap();
}

fn fetch_all(capsule: &limit_fetch_core::Capsule, queues: &[String]) -> Vec<String> {
    fetch_jobs(capsule, queues)
        .into_iter()
        .map(|f| f.queue)
        .collect()
}

fn fetch_jobs(capsule: &limit_fetch_core::Capsule, queues: &[String]) -> Vec<Fetched> {
    let none = Interrupt::new();
    std::iter::from_fn(|| capsule.fetch(queues, &none).unwrap()).collect()
}

fn jid(job: &[u8]) -> String {
    let text = String::from_utf8_lossy(job);
    text.split('"').nth(3).unwrap_or_default().to_owned()
}

#[test]
fn global_limit_caps_fetches_across_capsules() {
    let q = queue("global");
    push(&q, 10);
    let (a, b) = (capsule(), capsule());
    let none = Interrupt::new();
    a.limits()
        .set_limit(&q, LimitKind::Global, Some(3), &none)
        .unwrap();
    let queues = vec![q.clone()];
    let held = fetch_jobs(&a, &queues);
    assert_eq!(held.len(), 3);
    assert_eq!(fetch_all(&b, &queues).len(), 0, "the limit is global");
    a.acknowledge(&q, held[0].job.clone());
    a.flush(&none).unwrap();
    assert_eq!(
        fetch_all(&b, &queues).len(),
        1,
        "a released slot is free for any capsule"
    );
    assert_eq!(a.limits().busy(&q, a.uuid(), &none).unwrap(), (3, 2));
}

#[test]
fn process_limit_caps_each_capsule() {
    let q = queue("process");
    push(&q, 10);
    let (a, b) = (capsule(), capsule());
    let none = Interrupt::new();
    a.limits()
        .set_limit(&q, LimitKind::Process, Some(2), &none)
        .unwrap();
    let queues = vec![q.clone()];
    assert_eq!(fetch_all(&a, &queues).len(), 2);
    assert_eq!(fetch_all(&b, &queues).len(), 2);
    assert_eq!(a.limits().busy(&q, a.uuid(), &none).unwrap(), (4, 2));
}

#[test]
fn both_limits_apply_together() {
    let q = queue("both");
    push(&q, 10);
    let (a, b) = (capsule(), capsule());
    let none = Interrupt::new();
    a.limits()
        .set_limit(&q, LimitKind::Global, Some(3), &none)
        .unwrap();
    a.limits()
        .set_limit(&q, LimitKind::Process, Some(2), &none)
        .unwrap();
    let queues = vec![q.clone()];
    assert_eq!(fetch_all(&a, &queues).len(), 2, "process limit binds first");
    assert_eq!(fetch_all(&b, &queues).len(), 1, "then the global one");
}

#[test]
fn a_queue_at_its_limit_is_skipped_for_the_next_one_in_order() {
    let (limited, open) = (queue("limited"), queue("open"));
    push(&limited, 5);
    push(&open, 5);
    let a = capsule();
    let none = Interrupt::new();
    a.limits()
        .set_limit(&limited, LimitKind::Global, Some(1), &none)
        .unwrap();
    let order = vec![format!("queue:{limited}"), format!("queue:{open}")];
    let taken = fetch_all(&a, &order);
    assert_eq!(taken[0], limited, "strict order: the first queue first");
    assert_eq!(&taken[1..], vec![open.clone(); 5].as_slice());
}

#[test]
fn zero_pauses_and_broken_limits_read_as_zero() {
    let q = queue("zero");
    push(&q, 3);
    let a = capsule();
    let none = Interrupt::new();
    let queues = vec![q.clone()];
    a.limits()
        .set_limit(&q, LimitKind::Global, Some(0), &none)
        .unwrap();
    assert!(fetch_all(&a, &queues).is_empty());
    for garbage in ["-1", "2.5", "abc", ""] {
        let _: () = redis().set(keys::limit(&q), garbage).unwrap();
        assert!(
            fetch_all(&a, &queues).is_empty(),
            "limit {garbage:?} must fetch nothing"
        );
        assert_eq!(
            a.limits().limit(&q, LimitKind::Global, &none).unwrap(),
            Some(0)
        );
    }
    let _: () = redis().set(keys::limit(&q), "0").unwrap();
    let _: () = redis().set(keys::process_limit(&q), "x").unwrap();
    a.limits()
        .set_limit(&q, LimitKind::Global, None, &none)
        .unwrap();
    assert!(
        fetch_all(&a, &queues).is_empty(),
        "a broken process limit also fetches nothing"
    );
    a.limits()
        .set_limit(&q, LimitKind::Process, None, &none)
        .unwrap();
    assert_eq!(fetch_all(&a, &queues).len(), 3, "no limit: everything");
}

#[test]
fn stored_limits_are_read_raw_in_one_call() {
    let (q, r) = (queue("stored"), queue("stored"));
    let a = capsule();
    let none = Interrupt::new();
    let _: () = redis().set(keys::limit(&q), " 2.5").unwrap();
    let _: () = redis().set(keys::process_limit(&r), "7").unwrap();
    let stored: Vec<(String, LimitKind, String, Option<String>)> = a
        .limits()
        .stored_limits(&[&q, &r], &none)
        .unwrap()
        .into_iter()
        .map(|l| (l.queue, l.kind, l.key, l.raw))
        .collect();
    assert_eq!(
        stored,
        vec![
            (
                q.clone(),
                LimitKind::Global,
                keys::limit(&q),
                Some(" 2.5".into())
            ),
            (q.clone(), LimitKind::Process, keys::process_limit(&q), None),
            (r.clone(), LimitKind::Global, keys::limit(&r), None),
            (
                r.clone(),
                LimitKind::Process,
                keys::process_limit(&r),
                Some("7".into())
            ),
        ]
    );
    assert!(a
        .limits()
        .stored_limits(&[] as &[&str], &none)
        .unwrap()
        .is_empty());
}

#[test]
fn default_limits_do_not_overwrite_runtime_values() {
    let q = queue("defaults");
    let a = capsule();
    let none = Interrupt::new();
    a.limits()
        .set_limit(&q, LimitKind::Global, Some(7), &none)
        .unwrap();
    a.set_default_limits(
        vec![
            (q.clone(), LimitKind::Global, 2),
            (q.clone(), LimitKind::Process, 1),
        ],
        &none,
    )
    .unwrap();
    assert_eq!(
        a.limits().limit(&q, LimitKind::Global, &none).unwrap(),
        Some(7)
    );
    assert_eq!(
        a.limits().limit(&q, LimitKind::Process, &none).unwrap(),
        Some(1)
    );
}

#[test]
fn requeue_puts_jobs_back_first_in_line_and_frees_slots() {
    let q = queue("requeue");
    push(&q, 3);
    let a = capsule();
    let none = Interrupt::new();
    let first = a.fetch(&[q.as_str()], &none).unwrap().unwrap();
    a.requeue(vec![(q.clone(), first.job.clone())], &none)
        .unwrap();
    assert_eq!(a.limits().busy(&q, a.uuid(), &none).unwrap(), (0, 0));
    let again = a.fetch(&[q.as_str()], &none).unwrap().unwrap();
    assert_eq!(again.job, first.job, "a requeued job is fetched next");
}

#[test]
fn odd_queue_names_and_two_hundred_queues() {
    let names: Vec<String> = (0..200)
        .map(|i| queue(&format!("odd: name ü {i}")))
        .collect();
    push(&names[199], 1);
    let a = capsule();
    let none = Interrupt::new();
    a.limits()
        .set_limit(&names[199], LimitKind::Global, Some(1), &none)
        .unwrap();
    let fetched = a.fetch(&names, &none).unwrap().unwrap();
    assert_eq!(fetched.queue, names[199]);
    assert_eq!(
        a.limits().busy(&names[199], a.uuid(), &none).unwrap(),
        (1, 1)
    );
}

/// A fetch over many queues skips the empty ones in runs (lua/fetch/queues.lua's
/// `next_queued`): it still takes from the first that holds an eligible job,
/// in order, past a full queue that holds jobs.
#[test]
fn a_fetch_over_many_queues_takes_in_order_past_empty_and_full_ones() {
    let names: Vec<String> = (0..40).map(|i| queue(&format!("many {i}"))).collect();
    let none = Interrupt::new();
    let a = capsule();
    for i in [3, 7, 8, 21, 39] {
        push(&names[i], 1);
    }
    a.limits()
        .set_limit(&names[7], LimitKind::Global, Some(0), &none)
        .unwrap();
    let order: Vec<String> = std::iter::from_fn(|| a.fetch(&names, &none).unwrap())
        .map(|f| f.queue)
        .collect();
    let expected: Vec<String> = [3, 8, 21, 39].iter().map(|&i| names[i].clone()).collect();
    assert_eq!(order, expected);
    let left: usize = redis().llen(keys::queue(&names[7])).unwrap();
    assert_eq!(left, 1, "the full queue keeps its job");
}

#[test]
fn dead_capsules_are_reaped_on_every_queue_exactly_once() {
    let _turn = BEATING.lock().unwrap_or_else(|e| e.into_inner());
    let (mine, foreign) = (queue("mine"), queue("foreign"));
    let dead = format!("dead-{}", uuid::Uuid::new_v4());
    let mut conn = redis();
    let _: () = conn.sadd(keys::CAPSULES, &dead).unwrap();
    let _: () = conn
        .rpush(
            keys::busy(&foreign),
            vec![dead.as_str(), dead.as_str(), "someone-else"],
        )
        .unwrap();
    let _: () = conn.rpush(keys::busy(&mine), &dead).unwrap();
    // Registered as v5 registers, with no entry in keys::BEATS: the census
    // finds it, one of the reapers taking it.
    support::census_due();
    let reapers: Vec<_> = (0..4).map(|_| capsule()).collect();
    let none = Interrupt::new();
    let reports: Vec<_> = thread::scope(|s| {
        let handles: Vec<_> = reapers
            .iter()
            .map(|r| s.spawn(|| r.beat(&Interrupt::new()).unwrap()))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let freed: Vec<i64> = reports
        .iter()
        .flat_map(|r| r.reaped.iter().filter(|x| x.uuid == dead).map(|x| x.freed))
        .collect();
    assert_eq!(freed, vec![3], "one reaper frees all three slots");
    let left: Vec<String> = conn.lrange(keys::busy(&foreign), 0, -1).unwrap();
    assert_eq!(left, vec!["someone-else"]);
    assert!(!conn.sismember::<_, _, bool>(keys::CAPSULES, &dead).unwrap());
    for r in &reapers {
        r.deregister(&[mine.as_str()], &none).unwrap();
    }
}

#[test]
fn a_live_capsule_is_never_reaped() {
    let _turn = BEATING.lock().unwrap_or_else(|e| e.into_inner());
    let a = capsule();
    let b = capsule_with_period(Duration::from_secs(1));
    let none = Interrupt::new();
    let q = queue("alive");
    push(&q, 1);
    b.register(&none).unwrap();
    assert!(b.fetch(&[q.as_str()], &none).unwrap().is_some());
    let report = a.beat(&none).unwrap();
    assert!(report.reaped.iter().all(|x| x.uuid != b.uuid()));
    assert_eq!(a.limits().busy(&q, a.uuid(), &none).unwrap().0, 1);
}

#[test]
fn heartbeat_key_expires_after_four_periods() {
    let a = capsule_with_period(Duration::from_secs(2));
    a.register(&Interrupt::new()).unwrap();
    let ttl: i64 = redis().ttl(keys::heartbeat(a.uuid())).unwrap();
    assert!((7..=8).contains(&ttl), "ttl {ttl}");
}

#[test]
fn beat_heals_lost_releases_and_lost_bookings() {
    let _turn = BEATING.lock().unwrap_or_else(|e| e.into_inner());
    let q = queue("heal");
    push(&q, 2);
    let a = capsule();
    let none = Interrupt::new();
    let job = a.fetch(&[q.as_str()], &none).unwrap().expect("a job").job;
    let mut conn = redis();
    // A release that never reached Redis leaves an extra entry...
    let _: () = conn.rpush(keys::busy(&q), a.uuid()).unwrap();
    let report = a.beat(&none).unwrap();
    assert_eq!(report.corrected, vec![(keys::busy(&q), 2, 1)]);
    // ...and a booking lost (e.g. data loss in Redis) is written back.
    let _: () = conn.del(keys::busy(&q)).unwrap();
    let report = a.beat(&none).unwrap();
    assert_eq!(report.corrected, vec![(keys::busy(&q), 0, 1)]);
    a.acknowledge(&q, job);
    a.flush(&none).unwrap();
    assert!(a.beat(&none).unwrap().corrected.is_empty());
    assert_eq!(a.limits().busy(&q, a.uuid(), &none).unwrap(), (0, 0));
}

#[test]
fn deregister_frees_slots_and_removes_the_capsule() {
    let q = queue("dereg");
    push(&q, 2);
    let a = capsule();
    let none = Interrupt::new();
    a.register(&none).unwrap();
    assert!(a.fetch(&[q.as_str()], &none).unwrap().is_some());
    assert_eq!(a.deregister(&[q.as_str()], &none).unwrap(), 1);
    // Its unfinished job is back in the queue.
    assert_eq!(redis().llen::<_, i64>(format!("queue:{q}")).unwrap(), 2);
    let mut conn = redis();
    assert!(!conn.exists::<_, bool>(keys::heartbeat(a.uuid())).unwrap());
    assert!(!conn
        .sismember::<_, _, bool>(keys::CAPSULES, a.uuid())
        .unwrap());
    assert_eq!(a.limits().busy(&q, a.uuid(), &none).unwrap(), (0, 0));
}

#[test]
fn an_interrupted_fetch_returns_at_once_and_loses_no_job() {
    let _turn = PAUSING.lock().unwrap_or_else(|e| e.into_inner());
    let q = queue("interrupt");
    push(&q, 1);
    let a = capsule();
    let none = Interrupt::new();
    a.register(&none).unwrap(); // connect before Redis stalls
    pause_redis(1500);
    let interrupt = Arc::new(Interrupt::new());
    let trigger = interrupt.clone();
    let started = Instant::now();
    let waker = thread::spawn(move || {
        thread::sleep(Duration::from_millis(100));
        trigger.trigger();
    });
    let outcome = a.fetch(&[q.as_str()], &interrupt);
    let waited = started.elapsed();
    waker.join().unwrap();
    assert!(
        matches!(outcome, Err(limit_fetch_core::Error::Interrupted)),
        "{outcome:?}"
    );
    assert!(
        waited < Duration::from_millis(1000),
        "returned after {waited:?}"
    );
    // Once Redis answers, the abandoned job goes back and its slot is freed.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let queued: i64 = redis().llen(format!("queue:{q}")).unwrap();
        if queued == 1 && a.limits().busy(&q, a.uuid(), &none).unwrap() == (0, 0) {
            break;
        }
        assert!(Instant::now() < deadline, "job not put back");
        thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn an_interrupted_wait_can_be_resumed_for_the_same_reply() {
    let _turn = PAUSING.lock().unwrap_or_else(|e| e.into_inner());
    let q = queue("resume");
    push(&q, 1);
    let a = capsule();
    let none = Interrupt::new();
    a.register(&none).unwrap();
    pause_redis(400);
    let mut pending = a.start_fetch(&[q.as_str()], Wait::NONE).unwrap();
    let fired = Interrupt::new();
    fired.trigger();
    assert!(matches!(
        pending.wait(&fired),
        Err(limit_fetch_core::Error::Interrupted)
    ));
    let fetched = pending.wait(&none).unwrap().expect("the job");
    assert_eq!(fetched.queue, q);
    assert_eq!(a.limits().busy(&q, a.uuid(), &none).unwrap(), (1, 1));
}

#[test]
fn dropping_a_pending_fetch_whose_reply_arrived_gives_the_job_back() {
    let q = queue("dropped");
    push(&q, 1);
    let a = capsule();
    let none = Interrupt::new();
    let pending = a.start_fetch(&[q.as_str()], Wait::NONE).unwrap();
    // The reply is in the channel, untaken, when the caller walks away.
    let deadline = Instant::now() + Duration::from_secs(5);
    while a.limits().busy(&q, a.uuid(), &none).unwrap() != (1, 1) {
        assert!(Instant::now() < deadline, "the fetch did not run");
        thread::sleep(Duration::from_millis(10));
    }
    thread::sleep(Duration::from_millis(50));
    drop(pending);
    while redis().llen::<_, i64>(format!("queue:{q}")).unwrap() != 1
        || a.limits().busy(&q, a.uuid(), &none).unwrap() != (0, 0)
    {
        assert!(Instant::now() < deadline, "the job was not given back");
        thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_fetch_that_times_out_gives_its_late_job_back() {
    let _turn = PAUSING.lock().unwrap_or_else(|e| e.into_inner());
    let q = queue("timeout");
    push(&q, 1);
    let settings = limit_fetch_core::ConnectionSettings {
        timeout: Duration::from_millis(200),
        ..support::settings()
    };
    let a = Capsule::new(&settings, CapsuleOptions::default());
    let none = Interrupt::new();
    a.register(&none).unwrap();
    pause_redis(800);
    let outcome = a.fetch(&[q.as_str()], &none);
    assert!(
        matches!(outcome, Err(limit_fetch_core::Error::Connection(_))),
        "{outcome:?}"
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while redis().llen::<_, i64>(format!("queue:{q}")).unwrap() != 1
        || a.limits().busy(&q, a.uuid(), &none).unwrap() != (0, 0)
    {
        assert!(Instant::now() < deadline, "the late job was not put back");
        thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_beat_after_data_loss_registers_again_and_restores_configured_limits() {
    let _turn = BEATING.lock().unwrap_or_else(|e| e.into_inner());
    let q = queue("restore");
    let a = capsule();
    let none = Interrupt::new();
    a.set_default_limits(vec![(q.clone(), LimitKind::Global, 4)], &none)
        .unwrap();
    a.register(&none).unwrap();
    assert!(!a.beat(&none).unwrap().restored, "nothing lost yet");
    a.limits()
        .set_limit(&q, LimitKind::Global, None, &none)
        .unwrap();
    assert!(!a.beat(&none).unwrap().restored);
    assert_eq!(
        a.limits().limit(&q, LimitKind::Global, &none).unwrap(),
        None,
        "a runtime removal stays removed"
    );
    // What a Redis restart without persistence leaves: nothing.
    let _: () = redis().del(keys::heartbeat(a.uuid())).unwrap();
    let _: () = redis().srem(keys::CAPSULES, a.uuid()).unwrap();
    assert!(a.beat(&none).unwrap().restored);
    assert_eq!(
        a.limits().limit(&q, LimitKind::Global, &none).unwrap(),
        Some(4)
    );
    assert!(redis()
        .sismember::<_, _, bool>(keys::CAPSULES, a.uuid())
        .unwrap());
}

/// Makes `capsule` look dead to reapers: its heartbeat key expired.
fn kill(capsule: &Capsule) {
    support::expire(capsule.uuid());
}

#[test]
fn a_fetched_job_waits_in_the_capsules_in_progress_list_until_acknowledged() {
    let q = queue("inprogress");
    push(&q, 2);
    let a = capsule();
    let none = Interrupt::new();
    let fetched = a.fetch(&[q.as_str()], &none).unwrap().expect("a job");
    let mut conn = redis();
    let in_progress: Vec<Vec<u8>> = conn.lrange(keys::in_progress(a.uuid(), &q), 0, -1).unwrap();
    assert_eq!(in_progress, vec![fetched.job.clone()]);
    assert_eq!(jid(&fetched.job), "0", "the oldest job first");
    a.acknowledge(&q, fetched.job.clone());
    // The acknowledgement rides on the next fetch: one script call frees
    // the slot and takes the next job, even under a limit of 1.
    a.limits()
        .set_limit(&q, LimitKind::Global, Some(1), &none)
        .unwrap();
    let next = a
        .fetch(&[q.as_str()], &none)
        .unwrap()
        .expect("the next job");
    assert_eq!(jid(&next.job), "1");
    let in_progress: Vec<Vec<u8>> = conn.lrange(keys::in_progress(a.uuid(), &q), 0, -1).unwrap();
    assert_eq!(in_progress, vec![next.job.clone()]);
    assert_eq!(a.limits().busy(&q, a.uuid(), &none).unwrap(), (1, 1));
    // Pushed back, it leaves the in-progress list for the front of its queue.
    a.requeue(vec![(q.clone(), next.job.clone())], &none)
        .unwrap();
    assert_eq!(
        conn.llen::<_, i64>(keys::in_progress(a.uuid(), &q))
            .unwrap(),
        0
    );
    assert_eq!(a.limits().busy(&q, a.uuid(), &none).unwrap(), (0, 0));
    let again = a
        .fetch(&[q.as_str()], &none)
        .unwrap()
        .expect("the job again");
    assert_eq!(again.job, next.job);
}

/// Each acknowledgement waits its own grace for a fetch to carry it: the
/// flush that the first one's grace ends leaves a younger one, whose thread
/// is about to fetch, to go with its own grace.
#[test]
fn a_flush_leaves_an_acknowledgement_younger_than_its_grace() {
    // A pause of Redis would make the flush fail, and a later one send both.
    let _pause = PAUSING.lock().unwrap_or_else(|e| e.into_inner());
    let q = queue("young-ack");
    push(&q, 2);
    let grace = Duration::from_millis(1000);
    let a = Capsule::new(
        &support::settings(),
        CapsuleOptions {
            ack_grace: grace,
            ..CapsuleOptions::default()
        },
    );
    let none = Interrupt::new();
    // Registered: other tests' beats reap an unregistered one's jobs.
    a.register(&none).unwrap();
    let first = a.fetch(&[q.as_str()], &none).unwrap().expect("a job");
    let second = a.fetch(&[q.as_str()], &none).unwrap().expect("a job");
    let in_progress = || -> Vec<Vec<u8>> {
        redis()
            .lrange(keys::in_progress(a.uuid(), &q), 0, -1)
            .unwrap()
    };
    let start = Instant::now();
    a.acknowledge(&q, first.job.clone());
    thread::sleep(grace * 6 / 10);
    a.acknowledge(&q, second.job.clone());
    thread::sleep((start + grace * 13 / 10).saturating_duration_since(Instant::now()));
    assert_eq!(
        in_progress(),
        std::slice::from_ref(&second.job),
        "the first alone sent"
    );
    let deadline = start + grace * 4;
    while !in_progress().is_empty() {
        assert!(Instant::now() < deadline, "the second was never sent");
        thread::sleep(Duration::from_millis(20));
    }
    assert!(
        start.elapsed() >= grace * 16 / 10,
        "the second before its grace"
    );
}

#[test]
fn an_acknowledgement_goes_on_its_own_when_no_fetch_follows() {
    let q = queue("lone-ack");
    push(&q, 1);
    let a = capsule();
    let none = Interrupt::new();
    let fetched = a.fetch(&[q.as_str()], &none).unwrap().expect("a job");
    a.acknowledge(&q, fetched.job);
    let deadline = Instant::now() + Duration::from_secs(2);
    while a.limits().busy(&q, a.uuid(), &none).unwrap() != (0, 0) {
        assert!(
            Instant::now() < deadline,
            "the acknowledgement was never sent"
        );
        thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(
        redis()
            .llen::<_, i64>(keys::in_progress(a.uuid(), &q))
            .unwrap(),
        0
    );
}

#[test]
fn reaping_pushes_a_dead_capsules_jobs_back_first_in_line_exactly_once() {
    let _turn = BEATING.lock().unwrap_or_else(|e| e.into_inner());
    let q = queue("recover");
    push(&q, 4);
    let dead = capsule();
    let none = Interrupt::new();
    dead.register(&none).unwrap();
    let taken = fetch_jobs(&dead, std::slice::from_ref(&q));
    assert_eq!(taken.len(), 4);
    // Two more arrive while it runs; then it dies.
    let mut conn = redis();
    let _: () = conn
        .lpush(format!("queue:{q}"), r#"{"jid":"late"}"#)
        .unwrap();
    kill(&dead);
    let reapers: Vec<_> = (0..4).map(|_| capsule()).collect();
    let reports: Vec<_> = thread::scope(|s| {
        let handles: Vec<_> = reapers
            .iter()
            .map(|r| s.spawn(|| r.beat(&Interrupt::new()).unwrap()))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let done: Vec<_> = reports
        .iter()
        .flat_map(|r| r.reaped.iter().filter(|x| x.uuid == dead.uuid()))
        .collect();
    assert_eq!(done.len(), 1, "reaped once: {done:?}");
    assert_eq!((done[0].freed, done[0].requeued), (4, 4));
    // Fetched next, in the order they were first fetched, before the late one.
    let order: Vec<String> = fetch_jobs(&reapers[0], std::slice::from_ref(&q))
        .iter()
        .map(|f| jid(&f.job))
        .collect();
    assert_eq!(order, vec!["0", "1", "2", "3", "late"]);
    assert!(!conn
        .exists::<_, bool>(keys::in_progress(dead.uuid(), &q))
        .unwrap());
    assert!(!conn
        .exists::<_, bool>(keys::capsule_queues(dead.uuid()))
        .unwrap());
    for r in &reapers {
        r.deregister(&[q.as_str()], &none).unwrap();
    }
}

#[test]
fn a_job_recovered_more_than_max_recoveries_times_goes_to_the_dead_set() {
    let _turn = BEATING.lock().unwrap_or_else(|e| e.into_inner());
    let q = queue("poison");
    let payload = format!(r#"{{"jid":"{q}","class":"Crasher"}}"#);
    let mut conn = redis();
    let _: () = conn.lpush(format!("queue:{q}"), &payload).unwrap();
    let none = Interrupt::new();
    let options = CapsuleOptions {
        max_recoveries: 2,
        ..CapsuleOptions::default()
    };
    let mut dead_reports = Vec::new();
    for round in 1..=3 {
        let victim = Capsule::new(&support::settings(), options);
        victim.register(&none).unwrap();
        let fetched = victim.fetch(&[q.as_str()], &none).unwrap();
        assert!(
            fetched.is_some(),
            "round {round}: the job is back in its queue"
        );
        kill(&victim);
        let reaper_with_limit = Capsule::new(&support::settings(), options);
        let report = reaper_with_limit.beat(&none).unwrap();
        dead_reports.extend(
            report
                .reaped
                .into_iter()
                .filter(|r| r.uuid == victim.uuid())
                .flat_map(|r| r.dead),
        );
        reaper_with_limit.deregister(&[q.as_str()], &none).unwrap();
    }
    assert_eq!(
        dead_reports,
        vec![(q.clone(), q.clone(), "Crasher".to_owned())]
    );
    assert!(conn
        .zscore::<_, _, Option<f64>>(keys::DEAD, &payload)
        .unwrap()
        .is_some());
    assert_eq!(conn.llen::<_, i64>(format!("queue:{q}")).unwrap(), 0);
    let _: () = conn.zrem(keys::DEAD, &payload).unwrap();
}

/// A hand-over leaves out the acknowledgement's HDEL once it found no
/// recoveries counted; a job a reaper recovers after that, and a hand-over
/// then takes, still has its count forgotten when it is acknowledged.
#[test]
fn a_recovered_job_taken_by_a_hand_over_is_forgotten_when_acknowledged() {
    let _turn = BEATING.lock().unwrap_or_else(|e| e.into_inner());
    let q = queue("forgotten");
    support::push_unique(&q, 8);
    let none = Interrupt::new();
    let a = support::capsule_whose_acks_ride();
    a.register(&none).unwrap();
    let next = |held: Option<Fetched>| {
        if let Some(done) = held {
            a.acknowledge(&q, done.job);
        }
        a.fetch(&[q.as_str()], &none).unwrap()
    };
    let mut held = next(None);
    for _ in 0..3 {
        held = next(held);
    }
    let victim = capsule();
    victim.register(&none).unwrap();
    let lost = victim.fetch(&[q.as_str()], &none).unwrap().expect("a job");
    kill(&victim);
    let reaper = capsule();
    let report = reaper.beat(&none).unwrap();
    assert!(report.reaped.iter().any(|r| r.uuid == victim.uuid()));
    let digest = sha1_smol::Sha1::from(&lost.job).digest().to_string();
    let mut conn = redis();
    assert!(conn
        .hexists::<_, _, bool>(keys::RECOVERIES, &digest)
        .unwrap());
    let before = a.hand_overs();
    held = next(held);
    assert_eq!(held.as_ref().map(|f| &f.job), Some(&lost.job), "back first");
    held = next(held);
    assert!(held.is_some());
    assert_eq!(a.hand_overs() - before, 2, "both hand-overs");
    assert!(
        !conn
            .hexists::<_, _, bool>(keys::RECOVERIES, &digest)
            .unwrap(),
        "its recovery count forgotten"
    );
    reaper.deregister(&[q.as_str()], &none).unwrap();
    a.deregister(&[q.as_str()], &none).unwrap();
}

#[test]
fn a_beat_pushes_back_a_job_whose_fetch_reply_was_lost() {
    let _turn = BEATING.lock().unwrap_or_else(|e| e.into_inner());
    let q = queue("orphan");
    push(&q, 2);
    let a = capsule();
    let none = Interrupt::new();
    let held = a.fetch(&[q.as_str()], &none).unwrap().expect("a job");
    // What a fetch whose reply never arrived leaves behind.
    let mut conn = redis();
    let _: Vec<u8> = redis::cmd("LMOVE")
        .arg(format!("queue:{q}"))
        .arg(keys::in_progress(a.uuid(), &q))
        .arg("RIGHT")
        .arg("LEFT")
        .query(&mut conn)
        .unwrap();
    let _: () = conn.rpush(keys::busy(&q), a.uuid()).unwrap();
    let report = a.beat(&none).unwrap();
    assert_eq!(report.orphans, vec![(q.clone(), "1".to_owned())]);
    assert_eq!(report.corrected, vec![(keys::busy(&q), 2, 1)]);
    let in_progress: Vec<Vec<u8>> = conn.lrange(keys::in_progress(a.uuid(), &q), 0, -1).unwrap();
    assert_eq!(in_progress, vec![held.job]);
    let back: Vec<String> = conn.lrange(format!("queue:{q}"), 0, -1).unwrap();
    assert_eq!(back, vec![r#"{"jid":"1"}"#]);
    a.deregister(&[q.as_str()], &none).unwrap();
}

/// A thread's first fetch goes through the runtime and opens the thread's
/// own connection, which its later fetches use.
fn warm_up(capsule: &Capsule, q: &str) {
    let none = Interrupt::new();
    push(q, 1);
    let fetched = capsule.fetch(&[q], &none).unwrap().expect("warm-up job");
    capsule.acknowledge(q, fetched.job);
    capsule.flush(&none).unwrap();
    assert!(
        capsule.has_own_connection(),
        "the thread has its own connection"
    );
}

#[test]
fn a_thread_fetches_on_its_own_connection_in_one_round_trip() {
    let q = queue("own");
    let a = capsule();
    warm_up(&a, &q);
    push(&q, 20);
    let none = Interrupt::new();
    let before = a.round_trips();
    // An acknowledgement waits 2 ms for the next fetch to carry it, then
    // goes on its own: a gap that long (this thread descheduled on a loaded
    // machine) may cost one round trip more, and only such a gap may. The
    // gap is timed from before the acknowledgement, which starts the timer,
    // to after the fetch has taken it: never shorter than the timer's.
    let slow = Duration::from_millis(2);
    let mut slow_gaps = 0;
    let mut acknowledged: Option<Instant> = None;
    for _ in 0..20 {
        let fetched = a.fetch(&[q.as_str()], &none).unwrap().expect("a job");
        if acknowledged.is_some_and(|at| at.elapsed() >= slow) {
            slow_gaps += 1;
        }
        acknowledged = Some(Instant::now());
        a.acknowledge(&q, fetched.job);
    }
    let trips = a.round_trips() - before;
    if acknowledged.is_some_and(|at| at.elapsed() >= slow) {
        slow_gaps += 1;
    }
    assert!(slow_gaps < 15, "too loaded to tell: {slow_gaps} slow gaps");
    assert!(
        (20..=20 + slow_gaps).contains(&trips),
        "acknowledgements ride along: {trips} round trips for 20 fetches, {slow_gaps} slow gaps"
    );
    a.flush(&none).unwrap();
    assert_eq!(a.limits().busy(&q, a.uuid(), &none).unwrap(), (0, 0));
}

#[test]
fn an_interrupted_wait_on_the_own_connection_resumes_for_the_same_reply() {
    let _turn = PAUSING.lock().unwrap_or_else(|e| e.into_inner());
    let q = queue("own_resume");
    let a = capsule();
    warm_up(&a, &q);
    push(&q, 1);
    let none = Interrupt::new();
    // Long beside the interrupt's 50 ms: a loaded machine may run the
    // woken thread a few hundred ms late.
    pause_redis(1500);
    let mut pending = a.start_fetch(&[q.as_str()], Wait::NONE).unwrap();
    let interrupt = Arc::new(Interrupt::new());
    let trigger = interrupt.clone();
    let waker = thread::spawn(move || {
        thread::sleep(Duration::from_millis(50));
        trigger.trigger();
    });
    let started = Instant::now();
    assert!(matches!(
        pending.wait(&interrupt),
        Err(limit_fetch_core::Error::Interrupted)
    ));
    assert!(
        started.elapsed() < Duration::from_millis(1000),
        "poll(2) woke"
    );
    waker.join().unwrap();
    let fetched = pending.wait(&none).unwrap().expect("the job");
    assert_eq!(fetched.queue, q);
    assert_eq!(a.limits().busy(&q, a.uuid(), &none).unwrap(), (1, 1));
}

#[test]
fn dropping_a_fetch_in_flight_on_the_own_connection_gives_the_job_back() {
    let _turn = PAUSING.lock().unwrap_or_else(|e| e.into_inner());
    let q = queue("own_dropped");
    let a = capsule();
    warm_up(&a, &q);
    push(&q, 1);
    let none = Interrupt::new();
    pause_redis(300);
    drop(a.start_fetch(&[q.as_str()], Wait::NONE).unwrap());
    assert!(
        !a.has_own_connection(),
        "the connection left with the request"
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while redis().llen::<_, i64>(format!("queue:{q}")).unwrap() != 1
        || a.limits().busy(&q, a.uuid(), &none).unwrap() != (0, 0)
    {
        assert!(Instant::now() < deadline, "the job was not given back");
        thread::sleep(Duration::from_millis(20));
    }
}
