//! Reaping, against a real Redis, with no Ruby: a capsule dies holding jobs
//! in several queues (under queue and process limits) and slots of several
//! job limits (a class's, keys'), with jobs of those limits parked behind
//! it; other capsules' beats, racing each other, free everything it held
//! exactly once, push its jobs back to the front of their own queues in the
//! order it fetched them, send back the parked jobs its slots made room
//! for, and leave alone what a live capsule holds in the same lists.
//!
//! Each test checks every list, not a count: a reaper that frees one queue
//! of several, forgets job limits, or pushes back one queue's jobs must
//! fail here, in a second, not only in the CLI specs and the chaos run.

mod support;

use std::sync::{Mutex, MutexGuard};
use std::thread;

use limit_fetch_core::{keys, BeatReport, Capsule, Interrupt, LimitKind, Reaped};
use redis::Commands;
use support::{capsule, jid_of, push_jobs, queue, redis};

/// Every test here beats, and a beat reaps every dead capsule and sweeps
/// every job limit with parked jobs, whoever's: the tests take turns, so
/// that what each sees reaped and released is its own doing.
static TURN: Mutex<()> = Mutex::new(());

fn turn() -> MutexGuard<'static, ()> {
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

/// Leaves Redis as the next test needs it, even when a test fails: its
/// capsules deregistered (a dead one left unreaped would be reaped, and
/// reported, by the next test's beats) and its parked jobs gone (the next
/// test's beats would sweep them back, and count them as released).
struct Cleanup {
    capsules: Vec<Capsule>,
    ids: Vec<String>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let mut conn = redis();
        for id in &self.ids {
            let _: redis::RedisResult<()> = conn.del(keys::parked(id));
            let _: redis::RedisResult<()> = conn.srem(keys::LIMITS_WITH_PARKED, id);
        }
        for c in &self.capsules {
            let _ = c.deregister(&[] as &[&str], &Interrupt::new());
        }
    }
}

/// A job of `queue` as Sidekiq's client pushes it with the gem's client
/// middleware: the job limits it carries (id, default) first, its queue
/// next. Queue names are unique, so every payload is: a job's recoveries
/// are counted by its payload's SHA1.
fn job(queue: &str, jid: &str, limits: &[(&str, u64)]) -> String {
    let tail = format!(r#""queue":"{queue}","class":"ReaperJob","args":[],"jid":"{jid}"}}"#);
    if limits.is_empty() {
        return format!("{{{tail}");
    }
    let limits: Vec<String> = limits
        .iter()
        .map(|(id, concurrency)| format!(r#"{{"id":"{id}","concurrency":{concurrency}}}"#))
        .collect();
    format!(r#"{{"limit_fetch":[{}],{tail}"#, limits.join(","))
}

/// The jids of a list of jobs, taking them from its right end first: the
/// front of a queue first, the oldest of a parked or in-progress list first.
fn jids(key: &str) -> Vec<String> {
    let jobs: Vec<String> = redis().lrange(key, 0, -1).unwrap();
    jobs.iter().rev().map(|j| jid_of(j)).collect()
}

fn queued(q: &str) -> Vec<String> {
    jids(&keys::queue(q))
}

fn parked(id: &str) -> Vec<String> {
    jids(&keys::parked(id))
}

fn in_progress(c: &Capsule, q: &str) -> Vec<String> {
    jids(&keys::in_progress(c.uuid(), q))
}

/// A busy list's entries (capsule UUIDs), in order.
fn entries(key: &str) -> Vec<String> {
    redis().lrange(key, 0, -1).unwrap()
}

/// The jid a fetch by `c` from `q` took, if any.
fn fetch(c: &Capsule, q: &str) -> Option<String> {
    c.fetch(&[q], &Interrupt::new())
        .unwrap()
        .map(|f| jid_of(&String::from_utf8_lossy(&f.job)))
}

/// Fetches from `q` with `c` as many times as `expected` has jids, each
/// taking that job: what a capsule holds is set up step by step, checked.
fn take(c: &Capsule, q: &str, expected: &[&str]) {
    for jid in expected {
        assert_eq!(fetch(c, q).as_deref(), Some(*jid), "fetching from {q}");
    }
}

/// A key limit's id no other test uses.
fn key_id(label: &str) -> String {
    format!("key:ReaperJob#{label}-{}", uuid::Uuid::new_v4())
}

/// Each of `reapers` beats once, all at the same time.
fn beat_together(reapers: &[Capsule]) -> Vec<BeatReport> {
    thread::scope(|s| {
        let handles: Vec<_> = reapers
            .iter()
            .map(|r| s.spawn(|| r.beat(&Interrupt::new()).unwrap()))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// What `reports` say was reaped of the capsule `uuid`.
fn reaped_of<'a>(reports: &'a [BeatReport], uuid: &str) -> Vec<&'a Reaped> {
    reports
        .iter()
        .flat_map(|r| r.reaped.iter().filter(|x| x.uuid == uuid))
        .collect()
}

/// Every key left in Redis whose name holds `uuid`: a reaped capsule's own
/// keys (heartbeat, info, queues, job limits, in-progress lists) all go.
fn keys_of(uuid: &str) -> Vec<String> {
    redis().keys(format!("*{uuid}*")).unwrap()
}

fn registered(uuid: &str) -> bool {
    let mut conn = redis();
    conn.sismember(keys::CAPSULES, uuid).unwrap() || conn.sismember(keys::REGISTERED, uuid).unwrap()
}

#[test]
fn a_dead_capsule_is_reaped_once_on_every_queue_and_job_limit_it_held() {
    let _turn = turn();
    let none = Interrupt::new();
    let (qa, qb, qc, qd) = (
        queue("reap-a"),
        queue("reap-b"),
        queue("reap-c"),
        queue("reap-d"),
    );
    // A class limit of 3, and two keys: one of 1, one of 4. Some jobs
    // carry the class's limit and a key's, as a keyed class with a class
    // limit writes them.
    let class = format!("class:ReaperJob-{}", uuid::Uuid::new_v4());
    let (k1, k4) = (key_id("one"), key_id("four"));
    let (c, one, four) = ((class.as_str(), 3), (k1.as_str(), 1), (k4.as_str(), 4));
    push_jobs(
        &qa,
        &[
            job(&qa, "a0", &[c]),
            job(&qa, "a1", &[c, one]),
            job(&qa, "a2", &[]),
            job(&qa, "a3", &[c, one]),
            job(&qa, "a4", &[]),
        ],
    );
    push_jobs(
        &qb,
        &[
            job(&qb, "b0", &[four]),
            job(&qb, "b1", &[c, four]),
            job(&qb, "b2", &[c]),
            job(&qb, "b3", &[]),
        ],
    );
    push_jobs(
        &qc,
        &[
            job(&qc, "c0", &[four]),
            job(&qc, "c1", &[four]),
            job(&qc, "c2", &[one]),
            job(&qc, "c3", &[]),
            job(&qc, "c4", &[four]),
            job(&qc, "c5", &[]),
        ],
    );
    // A queue the dead capsule never fetched from: d0, parked there, may be
    // released by a beat's sweep after the reap (see below), and would go
    // ahead of the dead capsule's jobs in their queue.
    push_jobs(&qd, &[job(&qd, "d0", &[one])]);

    let (dead, live) = (capsule(), capsule());
    let reapers: Vec<Capsule> = (0..4).map(|_| capsule()).collect();
    let mut everyone = vec![dead.clone(), live.clone()];
    everyone.extend(reapers.iter().cloned());
    let _cleanup = Cleanup {
        capsules: everyone,
        ids: vec![class.clone(), k1.clone(), k4.clone()],
    };
    // Its info key too: a capsule's keys all go with it.
    dead.describe(r#"{"identity":"dead"}"#.to_owned());
    dead.register(&none).unwrap();
    live.register(&none).unwrap();
    for (q, kind, n) in [
        (&qa, LimitKind::Global, 4),
        (&qb, LimitKind::Process, 2),
        (&qc, LimitKind::Global, 6),
        (&qc, LimitKind::Process, 2),
    ] {
        live.limits().set_limit(q, kind, Some(n), &none).unwrap();
    }

    // The live capsule first holds a slot of the key of 4.
    take(&live, &qc, &["c0"]);
    // The dead one, while alive: three jobs of qa, two of qb (its process
    // limit), two of qc (its process limit; c2 parks on the way, its a1
    // holding the key of 1), filling the class's limit and both keys'.
    take(&dead, &qa, &["a0", "a1", "a2"]);
    take(&dead, &qb, &["b0", "b1"]);
    assert_eq!(fetch(&dead, &qb), None, "qb's process limit");
    take(&dead, &qc, &["c1", "c3"]);
    // The live one: d0 parks behind c2, a3 and b2 behind the class's limit
    // (the first of a3's limits that is full), c4 behind the key of 4.
    assert_eq!(fetch(&live, &qd), None);
    take(&live, &qa, &["a4"]);
    take(&live, &qb, &["b3"]);
    take(&live, &qc, &["c5"]);

    let (d, l) = (dead.uuid(), live.uuid());
    assert_eq!(entries(&keys::busy(&qa)), [d, d, d, l], "qa full (4)");
    assert_eq!(entries(&keys::busy(&qb)), [d, d, l]);
    assert_eq!(entries(&keys::busy(&qc)), [l, d, d, l]);
    assert_eq!(entries(&keys::job_busy(&class)), [d, d, d]);
    assert_eq!(entries(&keys::job_busy(&k1)), [d]);
    assert_eq!(entries(&keys::job_busy(&k4)), [l, d, d, d]);
    assert_eq!(parked(&class), ["a3", "b2"]);
    assert_eq!(parked(&k1), ["c2", "d0"]);
    assert_eq!(parked(&k4), ["c4"]);
    for q in [&qa, &qb, &qc, &qd] {
        assert_eq!(queued(q), Vec::<String>::new(), "{q}: all held or parked");
    }
    let live_held = [vec!["a4"], vec!["b3"], vec!["c0", "c5"]];
    assert_eq!([&qa, &qb, &qc].map(|q| in_progress(&live, q)), live_held);

    // It dies; four capsules beat at once.
    support::expire(dead.uuid());
    let reports = beat_together(&reapers);

    // Its slots are gone from every queue's busy list, the live one's stay.
    assert_eq!(entries(&keys::busy(&qa)), [l], "qa's busy list");
    assert_eq!(entries(&keys::busy(&qb)), [l], "qb's busy list");
    assert_eq!(entries(&keys::busy(&qc)), [l, l], "qc's busy list");
    // And from every job limit's.
    assert_eq!(
        entries(&keys::job_busy(&class)),
        Vec::<String>::new(),
        "the class limit's busy list"
    );
    assert_eq!(
        entries(&keys::job_busy(&k1)),
        Vec::<String>::new(),
        "the key of 1's busy list"
    );
    assert_eq!(
        entries(&keys::job_busy(&k4)),
        [l],
        "the key of 4's busy list"
    );

    // Its jobs are first in their own queues, in the order it fetched them;
    // behind them, the parked jobs its slots made room for: all the class's
    // (room for 3), the key of 4's one (room for 3), the oldest of the key
    // of 1's (room for 1). The reap releases them before it pushes the
    // dead capsule's jobs back, each to the front: they end up behind.
    assert_eq!(queued(&qa), ["a0", "a1", "a2", "a3"], "qa");
    assert_eq!(queued(&qb), ["b0", "b1", "b2"], "qb");
    // c2 and c4 in the order the reap met their keys: a set's.
    let mut qc_now = queued(&qc);
    if qc_now.len() == 4 {
        qc_now[2..].sort();
    }
    assert_eq!(qc_now, ["c1", "c3", "c2", "c4"], "qc");
    assert_eq!(parked(&class), Vec::<String>::new());
    assert_eq!(parked(&k4), Vec::<String>::new());
    // d0 waits for a slot of the key of 1: the reap released c2 alone, for
    // the one slot it freed. A beat's sweep may send d0 back after it (a
    // released job books no slot: the key's busy list looks empty until c2
    // is fetched), and then says so in its report.
    let swept: u64 = reports.iter().map(|r| r.released).sum();
    if queued(&qd).is_empty() {
        assert_eq!(parked(&k1), ["d0"]);
    } else {
        assert_eq!((queued(&qd), parked(&k1)), (vec!["d0".to_owned()], vec![]));
        assert!(
            swept >= 1,
            "d0 went back, and no sweep sent it: the reap did, beyond the room it made"
        );
    }

    // Reaped once, by one of the four: 7 slots of queues and 7 of job
    // limits, 7 jobs back, none dead.
    let done = reaped_of(&reports, dead.uuid());
    assert_eq!(done.len(), 1, "reaped once: {done:?}");
    assert_eq!(
        (done[0].freed, done[0].requeued, done[0].dead.len()),
        (14, 7, 0),
        "{:?}",
        done[0]
    );
    assert!(!done[0].unregistered);
    assert_eq!(keys_of(dead.uuid()), Vec::<String>::new(), "its keys");
    assert!(!registered(dead.uuid()));

    // The live capsule holds all it held: its jobs, its slot of the key of
    // 4, its registration.
    assert_eq!([&qa, &qb, &qc].map(|q| in_progress(&live, q)), live_held);
    assert_eq!(entries(&keys::job_busy(&k4)), [live.uuid()]);
    assert!(registered(live.uuid()));
    let beating: bool = redis().exists(keys::heartbeat(live.uuid())).unwrap();
    assert!(beating);
    assert!(reaped_of(&reports, live.uuid()).is_empty());
}

#[test]
fn dead_capsules_sharing_queues_and_a_key_with_a_live_one_are_each_reaped_once() {
    let _turn = turn();
    let none = Interrupt::new();
    let (q, r) = (queue("reap-shared"), queue("reap-shared-plain"));
    let k = key_id("shared");
    let keyed: Vec<String> = (0..6)
        .map(|i| job(&q, &format!("s{i}"), &[(k.as_str(), 10)]))
        .collect();
    push_jobs(&q, &keyed);
    let plain: Vec<String> = (0..4).map(|i| job(&r, &format!("t{i}"), &[])).collect();
    push_jobs(&r, &plain);
    let (one, two, live) = (capsule(), capsule(), capsule());
    let reapers: Vec<Capsule> = (0..3).map(|_| capsule()).collect();
    let mut everyone = vec![one.clone(), two.clone(), live.clone()];
    everyone.extend(reapers.iter().cloned());
    let _cleanup = Cleanup {
        capsules: everyone,
        ids: vec![k.clone()],
    };
    for c in [&one, &two, &live] {
        c.register(&none).unwrap();
    }
    // Their entries interleaved in each list.
    take(&live, &q, &["s0"]);
    take(&one, &q, &["s1"]);
    take(&two, &q, &["s2"]);
    take(&one, &q, &["s3"]);
    take(&two, &q, &["s4"]);
    take(&two, &r, &["t0"]);
    take(&live, &r, &["t1"]);
    take(&one, &r, &["t2"]);
    let l = live.uuid();

    for dead in [&one, &two] {
        support::expire(dead.uuid());
    }
    let reports = beat_together(&reapers);

    assert_eq!(entries(&keys::busy(&q)), [l], "{q}'s busy list");
    assert_eq!(entries(&keys::busy(&r)), [l], "{r}'s busy list");
    assert_eq!(entries(&keys::job_busy(&k)), [l], "the key's busy list");
    // Each dead capsule's jobs together and in their order, whichever was
    // reaped first, ahead of the job nobody fetched.
    let front = queued(&q);
    assert!(
        front == ["s1", "s3", "s2", "s4", "s5"] || front == ["s2", "s4", "s1", "s3", "s5"],
        "{q}: {front:?}"
    );
    let front = queued(&r);
    assert!(
        front == ["t0", "t2", "t3"] || front == ["t2", "t0", "t3"],
        "{r}: {front:?}"
    );
    for (dead, requeued) in [(&one, 3), (&two, 3)] {
        let done = reaped_of(&reports, dead.uuid());
        assert_eq!(done.len(), 1, "reaped once: {done:?}");
        // A slot of a queue per job, and of the key per job of q.
        assert_eq!((done[0].freed, done[0].requeued), (5, requeued));
        assert_eq!(keys_of(dead.uuid()), Vec::<String>::new());
        assert!(!registered(dead.uuid()));
    }
    assert_eq!(in_progress(&live, &q), ["s0"]);
    assert_eq!(in_progress(&live, &r), ["t1"]);
    assert!(registered(live.uuid()));
}

/// Calls of each command Redis ran since `CONFIG RESETSTAT` (those run
/// inside functions included), but the test's own: `INFO`, `CONFIG`, and
/// `CLIENT SETINFO` as each of its connections opens.
fn calls() -> std::collections::BTreeMap<String, u64> {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut redis())
        .unwrap();
    info.lines()
        .filter_map(|line| {
            let (name, rest) = line.strip_prefix("cmdstat_")?.split_once(':')?;
            let calls = rest.strip_prefix("calls=")?.split(',').next()?;
            Some((name.to_owned(), calls.parse().ok()?))
        })
        .filter(|(name, _)| {
            !["info", "config", "client"]
                .iter()
                .any(|own| name.starts_with(own))
        })
        .collect()
}

/// What one beat of `c` has Redis run, by command.
fn one_beat(c: &Capsule) -> std::collections::BTreeMap<String, u64> {
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query(&mut redis())
        .unwrap();
    let report = c.beat(&Interrupt::new()).unwrap();
    assert!(report.reaped.is_empty() && !report.held_off, "{report:?}");
    calls()
}

#[test]
fn a_beat_asks_after_no_live_capsule_however_many_there_are() {
    let _turn = turn();
    let none = Interrupt::new();
    let (beater, first) = (capsule(), capsule());
    let fleet: Vec<Capsule> = (0..40).map(|_| capsule()).collect();
    let mut everyone = vec![beater.clone(), first.clone()];
    everyone.extend(fleet.iter().cloned());
    let _cleanup = Cleanup {
        capsules: everyone,
        ids: Vec::new(),
    };
    beater.register(&none).unwrap();
    first.register(&none).unwrap();
    // Another capsule's census this period: these beats take none.
    let _: () = redis()
        .set_ex(keys::CENSUS, "another capsule", 600)
        .unwrap();
    // Its connection open and the library loaded, as at every later beat.
    beater.beat(&none).unwrap();
    let alone = one_beat(&beater);
    for c in &fleet {
        c.register(&none).unwrap();
    }
    let among_41 = one_beat(&beater);
    let _: () = redis().del(keys::CENSUS).unwrap();
    assert_eq!(
        among_41, alone,
        "a beat among 41 other live capsules sends what it sends beside one"
    );
    assert!(
        among_41.get("exists").copied().unwrap_or(0) <= 2,
        "its own heartbeat and the outage key: {among_41:?}"
    );
}

#[test]
fn a_capsules_beat_entry_is_written_with_its_heartbeat_and_leaves_with_it() {
    let _turn = turn();
    let none = Interrupt::new();
    let (gone, dead, reaper) = (capsule(), capsule(), capsule());
    let _cleanup = Cleanup {
        capsules: vec![gone.clone(), dead.clone(), reaper.clone()],
        ids: Vec::new(),
    };
    let score = |uuid: &str| -> Option<f64> { redis().zscore(keys::BEATS, uuid).unwrap() };
    let redis_ms = || {
        let (secs, micros): (i64, i64) = redis::cmd("TIME").query(&mut redis()).unwrap();
        (secs * 1000 + micros / 1000) as f64
    };
    for c in [&gone, &dead, &reaper] {
        c.register(&none).unwrap();
    }
    // Scored by when its heartbeat expires, by Redis's clock.
    let expires = redis_ms() + (gone.heartbeat_ttl() * 1000) as f64;
    let at = score(gone.uuid()).expect("an entry");
    assert!((at - expires).abs() < 2_000.0, "{at} against {expires}");

    // What a Redis that lost its data leaves: the next beat writes it again.
    let _: () = redis().zrem(keys::BEATS, gone.uuid()).unwrap();
    gone.beat(&none).unwrap();
    assert!(score(gone.uuid()).is_some(), "written again");

    // A clean stop takes it away; so does a reap.
    gone.deregister(&[] as &[&str], &none).unwrap();
    assert_eq!(score(gone.uuid()), None, "deregistered");
    support::expire(dead.uuid());
    let reaped = reaper.beat(&none).unwrap().reaped;
    assert!(reaped.iter().any(|r| r.uuid == dead.uuid()), "{reaped:?}");
    assert_eq!(score(dead.uuid()), None, "reaped");

    // An entry left by a capsule that a process of an older release reaped
    // (it knows no keys::BEATS) goes at the next beat that meets it.
    let ghost = format!("reaped-elsewhere-{}", uuid::Uuid::new_v4());
    let _: () = redis().zadd(keys::BEATS, &ghost, 0).unwrap();
    let report = reaper.beat(&none).unwrap();
    assert!(report.reaped.iter().all(|r| r.uuid != ghost), "{report:?}");
    assert_eq!(score(&ghost), None, "the stale entry");
}
