//! The way out (`Limits::release_all`), against a real Redis, with no Ruby:
//! parked jobs (behind a key's limit, behind a rate) and the in-progress
//! jobs of capsules that are not alive (registered with their heartbeat
//! gone, or unregistered) go back to the front of their queues, each once,
//! the oldest first out, and the bookkeeping that named them goes; nothing
//! is done while a capsule lives, unless forced, and a live capsule's jobs
//! are never touched; two releases at once move each job once.
//!
//! Each test checks every list, in order, not a count: a job moved twice,
//! lost or put behind a newer one fails here.

mod support;

use std::sync::{Mutex, MutexGuard};
use std::thread;

use limit_fetch_core::{keys, Capsule, Interrupt, QueueReleased, Released};
use redis::Commands;
use support::{capsule, jid_of, push_jobs, queue, redis, settings};

/// A release acts on every parked limit and every dead capsule in Redis,
/// whoever's: the tests take turns, so that what each sees is its own.
static TURN: Mutex<()> = Mutex::new(());

fn turn() -> MutexGuard<'static, ()> {
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

/// Deregisters a test's capsules even when it fails: a live one left would
/// make the next test's release refuse.
struct Cleanup(Vec<Capsule>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for c in &self.0 {
            let _ = c.deregister(&[] as &[&str], &Interrupt::new());
        }
    }
}

/// A job of `queue` as the client middleware writes it: its job limits
/// (id, concurrency or rate) first, its queue next.
fn job(queue: &str, jid: &str, limit: Option<(&str, &str)>) -> String {
    let tail = format!(r#""queue":"{queue}","class":"ReleaseJob","args":[],"jid":"{jid}"}}"#);
    match limit {
        None => format!("{{{tail}"),
        Some((id, rule)) => format!(r#"{{"limit_fetch":[{{"id":"{id}",{rule}}}],{tail}"#),
    }
}

fn jids(key: &str) -> Vec<String> {
    let jobs: Vec<String> = redis().lrange(key, 0, -1).unwrap();
    jobs.iter().rev().map(|j| jid_of(j)).collect()
}

/// A queue's jids, its front (the next fetched) first.
fn queued(q: &str) -> Vec<String> {
    jids(&keys::queue(q))
}

fn parked(id: &str) -> Vec<String> {
    jids(&keys::parked(id))
}

fn names(prefix: &str, range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|i| format!("{prefix}{i}")).collect()
}

fn fetch(c: &Capsule, q: &str) -> Option<String> {
    c.fetch(&[q], &Interrupt::new())
        .unwrap()
        .map(|f| jid_of(&String::from_utf8_lossy(&f.job)))
}

fn release(force: bool) -> Released {
    let limits = limit_fetch_core::Limits::new(&settings());
    limits.release_all(force, 3, &Interrupt::new()).unwrap()
}

/// Every key in Redis whose name holds `uuid`.
fn keys_of(uuid: &str) -> Vec<String> {
    redis().keys(format!("*{uuid}*")).unwrap()
}

fn moved(queue: &str, parked: u64, recovered: u64) -> QueueReleased {
    QueueReleased {
        queue: queue.to_owned(),
        parked,
        recovered,
    }
}

/// Parks `jobs` (oldest first) behind job limit `id` as the fetch does:
/// each pushed on the left, the limit noted in the parked set.
fn park(id: &str, jobs: &[String]) {
    let mut conn = redis();
    for job in jobs {
        let _: () = conn.lpush(keys::parked(id), job).unwrap();
    }
    let _: () = conn.sadd(keys::LIMITS_WITH_PARKED, id).unwrap();
}

#[test]
fn parked_jobs_and_those_of_capsules_not_alive_go_back_once_oldest_first() {
    let _turn = turn();
    let none = Interrupt::new();
    let (q, r, u) = (queue("tenants"), queue("rated"), queue("orphaned"));
    let key = format!("key:ReleaseJob#{}", uuid::Uuid::new_v4());
    let rated = format!("class:RatedJob-{}", uuid::Uuid::new_v4());
    // A tenant's backlog behind a key limit of 1, and another tenant's jobs.
    let mut jobs: Vec<String> = names("k", 0..5)
        .iter()
        .map(|jid| job(&q, jid, Some((&key, r#""concurrency":1"#))))
        .collect();
    jobs.extend(names("p", 0..2).iter().map(|jid| job(&q, jid, None)));
    push_jobs(&q, &jobs);
    // A class at 1 start a minute.
    let rated_jobs: Vec<String> = names("r", 0..4)
        .iter()
        .map(|jid| job(&r, jid, Some((&rated, r#""rate":[1,60]"#))))
        .collect();
    push_jobs(&r, &rated_jobs);
    push_jobs(&u, &[job(&u, "u0", None), job(&u, "u1", None)]);

    let (dead, orphan) = (capsule(), capsule());
    let _cleanup = Cleanup(vec![dead.clone(), orphan.clone()]);
    dead.register(&none).unwrap();
    orphan.register(&none).unwrap();
    // k0 takes the key's slot; the next fetch parks k1..k4 and takes p0.
    assert_eq!(fetch(&dead, &q).as_deref(), Some("k0"));
    assert_eq!(fetch(&dead, &q).as_deref(), Some("p0"));
    // r0 starts; r1..r3 park behind the rate.
    assert_eq!(fetch(&dead, &r).as_deref(), Some("r0"));
    assert_eq!(fetch(&dead, &r), None);
    assert_eq!(fetch(&orphan, &u).as_deref(), Some("u0"));
    assert_eq!(parked(&key), names("k", 1..5));
    assert_eq!(parked(&rated), names("r", 1..4));
    let rate_parked: Option<f64> = redis().zscore(keys::RATE_PARKED, &rated).unwrap();
    assert!(rate_parked.is_some(), "parked behind its rate");
    assert_eq!(queued(&q), ["p1"]);

    // Both die: one's heartbeat expires, the other is also forgotten by
    // both sets (as a v5 process reaping it would leave it).
    let mut conn = redis();
    let _: () = conn.del(keys::heartbeat(dead.uuid())).unwrap();
    let _: () = conn.del(keys::heartbeat(orphan.uuid())).unwrap();
    let _: () = conn.srem(keys::CAPSULES, orphan.uuid()).unwrap();
    let _: () = conn.srem(keys::REGISTERED, orphan.uuid()).unwrap();

    let released = release(false);
    assert!(!released.refused, "{released:?}");
    let mut expected = vec![moved(&q, 4, 2), moved(&r, 3, 1), moved(&u, 0, 1)];
    expected.sort_by(|a, b| a.queue.cmp(&b.queue));
    assert_eq!(released.queues, expected);
    assert_eq!(
        (
            released.capsules,
            released.dead.len(),
            released.outage_left_ms
        ),
        (2, 0, None)
    );

    // The capsules' jobs first, in the order they fetched them; then the
    // parked, oldest first; then what the queue held.
    assert_eq!(queued(&q), ["k0", "p0", "k1", "k2", "k3", "k4", "p1"]);
    assert_eq!(queued(&r), ["r0", "r1", "r2", "r3"]);
    assert_eq!(queued(&u), ["u0", "u1"]);
    // Nothing names them any more.
    assert_eq!(parked(&key), Vec::<String>::new());
    assert_eq!(parked(&rated), Vec::<String>::new());
    let still_parked: Vec<String> = conn.smembers(keys::LIMITS_WITH_PARKED).unwrap();
    assert!(!still_parked.contains(&key) && !still_parked.contains(&rated));
    let rate_parked: Option<f64> = conn.zscore(keys::RATE_PARKED, &rated).unwrap();
    assert_eq!(rate_parked, None);
    let due: bool = conn.exists(keys::RATE_DUE).unwrap();
    assert!(!due, "rate_due goes with the last rate-parked limit");
    for busy in [
        keys::busy(&q),
        keys::busy(&r),
        keys::busy(&u),
        keys::job_busy(&key),
        keys::job_busy(&rated),
    ] {
        let len: usize = conn.llen(&busy).unwrap();
        assert_eq!(len, 0, "{busy}");
    }
    for c in [&dead, &orphan] {
        assert_eq!(keys_of(c.uuid()), Vec::<String>::new());
    }

    // Again: nothing left to do.
    let again = release(false);
    assert_eq!((again.queues.len(), again.capsules), (0, 0), "{again:?}");
    assert_eq!(queued(&q).len(), 7);
}

#[test]
fn nothing_is_done_while_a_capsule_lives_unless_forced_and_its_jobs_stay_its_own() {
    let _turn = turn();
    let none = Interrupt::new();
    let q = queue("live");
    let key = format!("key:ReleaseJob#{}", uuid::Uuid::new_v4());
    let jobs: Vec<String> = names("k", 0..3)
        .iter()
        .map(|jid| job(&q, jid, Some((&key, r#""concurrency":1"#))))
        .collect();
    push_jobs(&q, &jobs);
    let live = capsule();
    let _cleanup = Cleanup(vec![live.clone()]);
    live.describe(r#"{"identity":"host:1:live"}"#.to_owned());
    live.register(&none).unwrap();
    assert_eq!(fetch(&live, &q).as_deref(), Some("k0"));
    assert_eq!(fetch(&live, &q), None);
    assert_eq!(parked(&key), ["k1", "k2"]);

    let refused = release(false);
    assert!(refused.refused);
    assert_eq!(
        refused
            .live
            .iter()
            .map(|c| c.uuid.as_str())
            .collect::<Vec<_>>(),
        [live.uuid()]
    );
    assert_eq!(
        refused.live[0].info.as_deref(),
        Some(r#"{"identity":"host:1:live"}"#)
    );
    assert!(refused.queues.is_empty());
    assert_eq!(parked(&key), ["k1", "k2"], "nothing moved");
    assert_eq!(queued(&q), Vec::<String>::new());

    let forced = release(true);
    assert!(!forced.refused);
    assert_eq!(forced.live.len(), 1);
    assert_eq!(forced.queues, [moved(&q, 2, 0)]);
    assert_eq!(forced.capsules, 0);
    assert_eq!(queued(&q), ["k1", "k2"]);
    // The live capsule keeps its job and its slots.
    assert_eq!(jids(&keys::in_progress(live.uuid(), &q)), ["k0"]);
    let slots: Vec<String> = redis().lrange(keys::job_busy(&key), 0, -1).unwrap();
    assert_eq!(slots, [live.uuid()]);
}

#[test]
fn batches_keep_the_order_and_two_releases_at_once_move_each_job_once() {
    let _turn = turn();
    let (q, r) = (queue("big-a"), queue("big-b"));
    let (ka, kb) = (
        format!("key:ReleaseJob#a-{}", uuid::Uuid::new_v4()),
        format!("key:ReleaseJob#b-{}", uuid::Uuid::new_v4()),
    );
    // More than a batch each (500), oldest first; b's jobs in two queues.
    let a: Vec<String> = names("a", 0..1234)
        .iter()
        .map(|jid| job(&q, jid, Some((&ka, r#""concurrency":1"#))))
        .collect();
    let b: Vec<String> = (0..1100)
        .map(|i| {
            let queue = if i % 2 == 0 { &q } else { &r };
            job(queue, &format!("b{i}"), Some((&kb, r#""concurrency":1"#)))
        })
        .collect();
    park(&ka, &a);
    park(&kb, &b);
    push_jobs(&q, &[job(&q, "queued", None)]);

    let reports: Vec<Released> = thread::scope(|s| {
        let handles: Vec<_> = (0..2).map(|_| s.spawn(|| release(false))).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let total: u64 = reports
        .iter()
        .flat_map(|r| &r.queues)
        .map(|m| m.parked)
        .sum();
    assert_eq!(total, 2334, "{reports:?}");

    // Each limit's jobs in their order; which limit went first is the
    // releases' choice.
    let front = queued(&q);
    assert_eq!(front.len(), 1234 + 550 + 1);
    assert_eq!(front.last().map(String::as_str), Some("queued"));
    let of = |prefix: &str| -> Vec<String> {
        front
            .iter()
            .filter(|j| j.starts_with(prefix))
            .cloned()
            .collect()
    };
    assert_eq!(of("a"), names("a", 0..1234));
    let evens: Vec<String> = (0..1100).step_by(2).map(|i| format!("b{i}")).collect();
    assert_eq!(of("b"), evens);
    let odds: Vec<String> = (1..1100).step_by(2).map(|i| format!("b{i}")).collect();
    assert_eq!(queued(&r), odds);
    assert_eq!(parked(&ka).len() + parked(&kb).len(), 0);
}

#[test]
fn while_the_outage_key_stands_no_capsule_is_reaped() {
    let _turn = turn();
    let none = Interrupt::new();
    let q = queue("outage");
    push_jobs(&q, &[job(&q, "o0", None), job(&q, "o1", None)]);
    let dead = capsule();
    let _cleanup = Cleanup(vec![dead.clone()]);
    dead.register(&none).unwrap();
    assert_eq!(fetch(&dead, &q).as_deref(), Some("o0"));
    let mut conn = redis();
    let _: () = conn.del(keys::heartbeat(dead.uuid())).unwrap();
    let _: () = conn.set_ex(keys::OUTAGE, "someone", 30).unwrap();

    let held = release(false);
    let _: () = conn.del(keys::OUTAGE).unwrap();
    assert!(
        held.outage_left_ms.is_some_and(|ms| ms > 25_000),
        "{held:?}"
    );
    assert_eq!(held.capsules, 0);
    assert_eq!(queued(&q), ["o1"]);

    let released = release(false);
    assert_eq!(
        (released.capsules, released.queues.clone()),
        (1, vec![moved(&q, 0, 1)])
    );
    assert_eq!(queued(&q), ["o0", "o1"]);
}

#[test]
fn a_parked_job_naming_no_queue_goes_to_the_dead_set_and_is_named() {
    let _turn = turn();
    let q = queue("named");
    let key = format!("key:ReleaseJob#{}", uuid::Uuid::new_v4());
    let nameless = format!(
        r#"{{"limit_fetch":[{{"id":"{key}","concurrency":1}}],"class":"HandWritten","jid":"n0"}}"#
    );
    park(&key, &[job(&q, "q0", None), nameless.clone()]);

    let released = release(false);
    assert_eq!(released.queues, [moved(&q, 1, 0)]);
    assert_eq!(
        released.dead,
        [(String::new(), "n0".to_owned(), "HandWritten".to_owned())]
    );
    assert_eq!(queued(&q), ["q0"]);
    let dead: Option<f64> = redis().zscore(keys::DEAD, &nameless).unwrap();
    assert!(dead.is_some(), "in Sidekiq's dead set");
    assert_eq!(parked(&key), Vec::<String>::new());
}
