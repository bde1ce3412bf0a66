//! Outages and freezes: a capsule that could not beat is not told from a
//! dead one by its heartbeat alone. A capsule back from a break in its own
//! beats (a beat that waited on a stalled Redis for longer than a period
//! is one) holds off everyone's reaping for a heartbeat's expiry; a capsule
//! that is no witness yet vouches for Redis to no other; a capsule
//! reaped while it lived books again what it still runs, in every index,
//! and frees each slot once; a job whose acknowledgement Redis lost is not
//! run again. A test binary of its own: the outage key holds off every
//! capsule's reaping, other tests' included.

mod support;

use std::thread;
use std::time::{Duration, Instant};

use limit_fetch_core::{keys, Capsule, Fetched, Interrupt, LimitKind};
use redis::Commands;
use support::{capsule, capsule_with_period, push_jobs, queue, redis};

/// Tests that beat take turns: the outage key is everyone's.
static BEATING: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn turn() -> std::sync::MutexGuard<'static, ()> {
    let turn = BEATING.lock().unwrap_or_else(|e| e.into_inner());
    let _: () = redis().del(keys::OUTAGE).unwrap();
    turn
}

/// A capsule whose heartbeat expires after 1 s (a period of 250 ms).
fn quick() -> Capsule {
    let c = capsule_with_period(Duration::from_millis(250));
    assert_eq!(c.heartbeat_ttl(), 1);
    c
}

/// A job of `queue` carrying one key limit `id` of 1, as the client
/// middleware writes it.
fn keyed(queue: &str, jid: &str, id: &str) -> String {
    format!(
        r#"{{"limit_fetch":[{{"id":"{id}","concurrency":1}}],"queue":"{queue}","class":"K","args":[],"jid":"{jid}"}}"#
    )
}

fn fetch(c: &Capsule, q: &str) -> Option<Fetched> {
    c.fetch(&[q], &Interrupt::new()).unwrap()
}

fn list(key: &str) -> Vec<String> {
    redis().lrange(key, 0, -1).unwrap()
}

fn entries(key: &str, uuid: &str) -> usize {
    list(key).iter().filter(|e| *e == uuid).count()
}

/// Makes `c` look dead: its heartbeat expired.
fn silence(c: &Capsule) {
    support::expire(c.uuid());
}

fn reaped(report: &limit_fetch_core::BeatReport, c: &Capsule) -> bool {
    report.reaped.iter().any(|r| r.uuid == c.uuid())
}

/// A registered capsule.
fn registered() -> Capsule {
    let c = capsule();
    c.register(&Interrupt::new()).unwrap();
    c
}

/// `live` frozen past its expiry: another capsule, which it returns,
/// reaps it (its jobs pushed back, its slots freed).
fn reap_alive(live: &Capsule) -> Capsule {
    silence(live);
    let other = registered();
    assert!(reaped(&other.beat(&Interrupt::new()).unwrap(), live));
    other
}

#[test]
fn a_capsule_back_from_a_break_in_its_beats_holds_off_everyones_reaping_for_an_expiry() {
    let _turn = turn();
    let none = Interrupt::new();
    let q = queue("break");
    push_jobs(&q, &[keyed(&q, "j1", "break-k")]);
    let dead = capsule();
    dead.register(&none).unwrap();
    fetch(&dead, &q).expect("a job");
    let a = quick();
    assert!(!a.beat(&none).unwrap().held_off);
    // Silent for longer than its own expiry (frozen, or Redis away), a
    // capsule cannot tell the others' silence from death.
    thread::sleep(Duration::from_millis(1300));
    silence(&dead);
    let back = a.beat(&none).unwrap();
    let back_at = Instant::now();
    assert!(back.held_off, "{back:?}");
    assert!(!reaped(&back, &dead), "{back:?}");
    let marker: Option<String> = redis().get(keys::OUTAGE).unwrap();
    assert_eq!(marker.as_deref(), Some(a.uuid()));
    // Another capsule, with no break of its own, holds off too.
    let b = capsule();
    let report = b.beat(&none).unwrap();
    assert!(report.held_off && !reaped(&report, &dead), "{report:?}");
    assert_eq!(entries(&keys::busy(&q), dead.uuid()), 1);
    assert_eq!(list(&keys::in_progress(dead.uuid(), &q)).len(), 1);
    // An expiry later (a's beats going on without a break), the dead
    // capsule is reaped, once.
    let deadline = Instant::now() + Duration::from_secs(3);
    let report = loop {
        thread::sleep(Duration::from_millis(200));
        let report = a.beat(&none).unwrap();
        if !report.held_off || Instant::now() > deadline {
            break report;
        }
        assert!(!reaped(&report, &dead), "{report:?}");
    };
    assert!(reaped(&report, &dead), "{report:?}");
    assert!(
        back_at.elapsed() >= Duration::from_millis(900),
        "held off {:?}, less than an expiry",
        back_at.elapsed()
    );
    assert_eq!(list(&keys::busy(&q)), Vec::<String>::new());
    assert_eq!(list(&keys::job_busy("break-k")), Vec::<String>::new());
    assert_eq!(list(&keys::queue(&q)).len(), 1, "its job went back");
    b.deregister(&[q.as_str()], &none).unwrap();
    a.deregister(&[q.as_str()], &none).unwrap();
}

#[test]
fn a_capsule_reaped_while_it_lived_books_again_what_it_runs_in_every_index_and_frees_each_slot_once(
) {
    let _turn = turn();
    let none = Interrupt::new();
    let q = queue("woken");
    let jobs = [keyed(&q, "t1", "woken-1"), keyed(&q, "t2", "woken-2")];
    push_jobs(&q, &jobs);
    let live = registered();
    live.limits()
        .set_limit(&q, LimitKind::Global, Some(2), &none)
        .unwrap();
    let first = fetch(&live, &q).expect("a job");
    let second = fetch(&live, &q).expect("a job");
    assert!(fetch(&live, &q).is_none());

    // Frozen past its expiry: reaped, its jobs pushed back and taken again
    // by another capsule, which fills the limit.
    let other = reap_alive(&live);
    let again = [
        fetch(&other, &q).expect("a job"),
        fetch(&other, &q).expect("a job"),
    ];

    // It wakes: its beat books its two running jobs again, everywhere.
    let report = live.beat(&none).unwrap();
    assert!(report.restored && !report.lost_data, "{report:?}");
    let mut rebooked: Vec<String> = report.rebooked.iter().map(|r| r.jid.clone()).collect();
    assert!(report.rebooked.iter().all(|r| !r.withdrawn), "taken again");
    rebooked.sort();
    assert_eq!(rebooked, ["t1", "t2"]);
    assert_eq!(entries(&keys::busy(&q), live.uuid()), 2);
    assert_eq!(entries(&keys::busy(&q), other.uuid()), 2);
    assert_eq!(list(&keys::in_progress(live.uuid(), &q)).len(), 2);
    for id in ["woken-1", "woken-2"] {
        assert_eq!(list(&keys::job_busy(id)).len(), 2, "{id}");
        assert_eq!(entries(&keys::job_busy(id), live.uuid()), 1, "{id}");
    }
    // Its job limits' slots are found by the jobs holding them, in its
    // in-progress list (reap.lua), as they were before.
    // Over the limit while its originals finish: nobody takes a third.
    push_jobs(&q, &[keyed(&q, "t3", "woken-3")]);
    assert!(fetch(&other, &q).is_none());

    // Each acknowledgement frees its own slots, once.
    live.acknowledge(&q, first.job);
    live.flush(&none).unwrap();
    assert_eq!(entries(&keys::busy(&q), live.uuid()), 1);
    assert_eq!(entries(&keys::busy(&q), other.uuid()), 2);
    assert_eq!(list(&keys::job_busy("woken-1")), [other.uuid()]);
    live.acknowledge(&q, second.job);
    live.flush(&none).unwrap();
    assert_eq!(list(&keys::busy(&q)), [other.uuid(), other.uuid()]);
    assert_eq!(list(&keys::in_progress(live.uuid(), &q)).len(), 0);
    let report = live.beat(&none).unwrap();
    assert!(
        report.corrected.is_empty() && report.rebooked.is_empty(),
        "{report:?}"
    );
    for job in again {
        other.acknowledge(&q, job.job);
    }
    other.flush(&none).unwrap();
    let third = fetch(&live, &q).expect("the limit has room again");
    live.acknowledge(&q, third.job);
    live.flush(&none).unwrap();
    for id in ["woken-1", "woken-2", "woken-3"] {
        assert_eq!(list(&keys::job_busy(id)), Vec::<String>::new(), "{id}");
    }
    assert_eq!(list(&keys::busy(&q)), Vec::<String>::new());
    live.deregister(&[q.as_str()], &none).unwrap();
    other.deregister(&[q.as_str()], &none).unwrap();
}

#[test]
fn a_reaped_capsule_whose_job_ends_before_it_beats_again_frees_nothing_of_others() {
    let _turn = turn();
    let none = Interrupt::new();
    let q = queue("ended");
    push_jobs(&q, &[keyed(&q, "e1", "ended-1")]);
    let live = registered();
    let job = fetch(&live, &q).expect("a job");
    let other = reap_alive(&live);
    let again = fetch(&other, &q).expect("its job, again");
    // Its original ends before its next beat: nothing of its is booked.
    live.acknowledge(&q, job.job);
    live.flush(&none).unwrap();
    assert_eq!(list(&keys::busy(&q)), [other.uuid()]);
    assert_eq!(list(&keys::job_busy("ended-1")), [other.uuid()]);
    let report = live.beat(&none).unwrap();
    assert!(
        report.rebooked.is_empty() && report.corrected.is_empty(),
        "{report:?}"
    );
    assert_eq!(list(&keys::busy(&q)), [other.uuid()]);
    other.acknowledge(&q, again.job);
    other.flush(&none).unwrap();
    assert_eq!(list(&keys::busy(&q)), Vec::<String>::new());
    assert_eq!(list(&keys::job_busy("ended-1")), Vec::<String>::new());
    live.deregister(&[q.as_str()], &none).unwrap();
    other.deregister(&[q.as_str()], &none).unwrap();
}

#[test]
fn after_a_break_a_finished_job_whose_acknowledgement_redis_lost_is_removed_not_run_again() {
    let _turn = turn();
    let none = Interrupt::new();
    let q = queue("lost-ack");
    push_jobs(&q, &[keyed(&q, "f1", "lost-1"), keyed(&q, "f2", "lost-2")]);
    let a = quick();
    a.beat(&none).unwrap();
    let done = fetch(&a, &q).expect("a job");
    let running = fetch(&a, &q).expect("a job");
    a.acknowledge(&q, done.job.clone());
    a.flush(&none).unwrap();
    // Redis loses the acknowledgement's writes (a failover, a restart
    // that lost its last second).
    let mut conn = redis();
    let _: () = conn
        .lpush(keys::in_progress(a.uuid(), &q), &done.job)
        .unwrap();
    let _: () = conn.rpush(keys::busy(&q), a.uuid()).unwrap();
    let _: () = conn.rpush(keys::job_busy("lost-1"), a.uuid()).unwrap();
    thread::sleep(Duration::from_millis(1300));
    let report = a.beat(&none).unwrap();
    assert_eq!(
        report.finished,
        [(q.clone(), "f1".to_owned())],
        "{report:?}"
    );
    assert!(report.orphans.is_empty(), "{report:?}");
    assert_eq!(
        list(&keys::queue(&q)),
        Vec::<String>::new(),
        "not run again"
    );
    assert_eq!(
        list(&keys::busy(&q)),
        [a.uuid()],
        "the running job's slot alone"
    );
    assert_eq!(list(&keys::job_busy("lost-1")), Vec::<String>::new());
    assert_eq!(list(&keys::job_busy("lost-2")), [a.uuid()]);
    a.acknowledge(&q, running.job);
    a.flush(&none).unwrap();
    assert_eq!(list(&keys::busy(&q)), Vec::<String>::new());
    a.deregister(&[q.as_str()], &none).unwrap();
}

#[test]
fn a_job_booked_again_that_nobody_took_yet_is_taken_out_of_its_queue_and_runs_once() {
    let _turn = turn();
    let none = Interrupt::new();
    let q = queue("withdrawn");
    push_jobs(&q, &[keyed(&q, "w1", "withdrawn-1")]);
    let live = registered();
    let job = fetch(&live, &q).expect("a job");
    let other = reap_alive(&live);
    assert_eq!(list(&keys::queue(&q)).len(), 1, "pushed back");
    let report = live.beat(&none).unwrap();
    assert_eq!(report.rebooked.len(), 1, "{report:?}");
    assert!(report.rebooked[0].withdrawn, "{report:?}");
    assert_eq!(list(&keys::queue(&q)), Vec::<String>::new());
    assert!(fetch(&other, &q).is_none(), "it runs once");
    live.acknowledge(&q, job.job);
    live.flush(&none).unwrap();
    assert_eq!(list(&keys::busy(&q)), Vec::<String>::new());
    assert_eq!(list(&keys::job_busy("withdrawn-1")), Vec::<String>::new());
    live.deregister(&[q.as_str()], &none).unwrap();
    other.deregister(&[q.as_str()], &none).unwrap();
}

#[test]
fn a_capsule_that_starts_while_no_capsule_beats_reaps_only_after_an_expiry_of_its_own_beats() {
    let _turn = turn();
    let none = Interrupt::new();
    let q = queue("witness");
    push_jobs(&q, &[keyed(&q, "s1", "witness-1")]);
    let silent = registered();
    fetch(&silent, &q).expect("a job");
    // An outage longer than an expiry: every heartbeat, and the last beat's
    // key, expired; a process that starts then beats before the others.
    silence(&silent);
    let fresh = quick();
    let _: () = redis().del(keys::LAST_BEAT).unwrap();
    let first = fresh.beat(&none).unwrap();
    let started = Instant::now();
    assert!(first.held_off && !reaped(&first, &silent), "{first:?}");
    let report = loop {
        thread::sleep(Duration::from_millis(200));
        let report = fresh.beat(&none).unwrap();
        if !report.held_off || started.elapsed() > Duration::from_secs(3) {
            break report;
        }
        assert!(!reaped(&report, &silent), "{report:?}");
    };
    assert!(reaped(&report, &silent), "{report:?}");
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );
    // A witness now, its beats vouch for Redis: one that starts while it
    // beats reaps at once.
    let last: Option<String> = redis().get(keys::LAST_BEAT).unwrap();
    assert_eq!(last.as_deref(), Some(fresh.uuid()));
    let dead = registered();
    fetch(&dead, &q).expect("its job, again");
    silence(&dead);
    let vouched = quick();
    assert!(reaped(&vouched.beat(&none).unwrap(), &dead));
    for c in [fresh, vouched] {
        c.deregister(&[q.as_str()], &none).unwrap();
    }
}

/// Stops every client of Redis (this one's included) for `pause`, as a
/// Redis that stalls (a fork for a snapshot, a stopped process) does.
fn stall_redis(pause: Duration) {
    let _: () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(pause.as_millis() as u64)
        .arg("ALL")
        .query(&mut redis())
        .unwrap();
}

#[test]
fn a_beat_whose_registration_waited_longer_than_a_period_holds_off_everyones_reaping() {
    let _turn = turn();
    let none = Interrupt::new();
    let q = queue("stall");
    push_jobs(&q, &[keyed(&q, "st1", "stall-k")]);
    let stalled = registered();
    fetch(&stalled, &q).expect("a job");
    let a = quick();
    assert!(!a.beat(&none).unwrap().held_off);
    // Its beats went on without a break, but the next one waits on a Redis
    // that stands still for longer than a period: every capsule's beats
    // waited as long, and a heartbeat may have run out meanwhile.
    stall_redis(Duration::from_millis(700));
    let report = a.beat(&none).unwrap();
    assert!(report.held_off && !reaped(&report, &stalled), "{report:?}");
    let marker: Option<String> = redis().get(keys::OUTAGE).unwrap();
    assert_eq!(
        marker.as_deref(),
        Some(a.uuid()),
        "no outage key after a registration that waited longer than a period"
    );
    // A capsule whose heartbeat ran out while Redis stood still is alive:
    // another capsule, a witness with no break of its own, leaves it be.
    silence(&stalled);
    let b = registered();
    let report = b.beat(&none).unwrap();
    assert!(report.held_off && !reaped(&report, &stalled), "{report:?}");
    assert_eq!(entries(&keys::busy(&q), stalled.uuid()), 1);
    for c in [a, b, stalled] {
        c.deregister(&[q.as_str()], &none).unwrap();
    }
}

#[test]
fn a_capsule_that_is_no_witness_yet_vouches_for_redis_to_no_other() {
    let _turn = turn();
    let none = Interrupt::new();
    let q = queue("vouch");
    push_jobs(&q, &[keyed(&q, "v1", "vouch-1")]);
    let silent = registered();
    fetch(&silent, &q).expect("a job");
    // After an outage longer than an expiry (every heartbeat and the last
    // beat's record gone), two processes start, one a moment after the
    // other: neither knows whether the silent capsule is dead.
    silence(&silent);
    let (fresh, next) = (quick(), quick());
    let _: () = redis().del(keys::LAST_BEAT).unwrap();
    let first = fresh.beat(&none).unwrap();
    assert!(first.held_off && !reaped(&first, &silent), "{first:?}");
    // Its beat, held off, records none: a record of it would tell the next
    // capsule to start that Redis served beats, and that one would take the
    // silent capsule for dead at once.
    let last: Option<String> = redis().get(keys::LAST_BEAT).unwrap();
    assert_eq!(last, None, "a capsule that is no witness recorded its beat");
    let report = next.beat(&none).unwrap();
    assert!(report.held_off && !reaped(&report, &silent), "{report:?}");
    assert_eq!(entries(&keys::busy(&q), silent.uuid()), 1);
    for c in [fresh, next, silent] {
        c.deregister(&[q.as_str()], &none).unwrap();
    }
}
