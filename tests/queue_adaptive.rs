//! A queue's adaptive limit (`limits: {queue: "1..20"}`) against a real
//! Redis: its limit in force starts at its floor, grows by one a round
//! while it is reached with jobs waiting, never above its ceiling, shrinks
//! at a back-off of any of its jobs, never below its floor, and is
//! forgotten when its state expires; a limit set at run time holds instead.

mod support;

use std::thread::sleep;
use std::time::Duration;

use limit_fetch_core::{keys, BackOff, Capsule, Fetched, Interrupt};
use redis::Commands;
use support::{capsule_whose_acks_ride, push_jobs, queue, redis};

/// A round (lua/prelude/adaptive.lua's ROUND) and a little.
const ROUND: Duration = Duration::from_millis(520);

fn job(q: &str, jid: &str) -> String {
    format!(r#"{{"queue":"{q}","class":"Api{q}","args":[],"jid":"{jid}"}}"#)
}

fn adaptive_queue(label: &str, range: &str, jobs: usize) -> String {
    let q = queue(label);
    let floor = range.split("..").next().unwrap_or_default();
    let _: () = redis().set(keys::limit(&q), floor).unwrap();
    let _: () = redis().set(keys::limit_range(&q), range).unwrap();
    let jobs: Vec<String> = (0..jobs).map(|i| job(&q, &format!("j{i}"))).collect();
    push_jobs(&q, &jobs);
    q
}

fn in_force(q: &str) -> Option<u64> {
    let raw: Option<String> = redis().get(keys::adaptive(q)).unwrap();
    raw.and_then(|r| r.split(' ').next().and_then(|v| v.parse().ok()))
}

fn processor() -> Capsule {
    let capsule = capsule_whose_acks_ride();
    capsule.register(&Interrupt::new()).unwrap();
    capsule
}

/// Sidekiq's processors, on one capsule: each takes what it may.
struct Processors<'a> {
    capsule: &'a Capsule,
    queue: &'a str,
    running: Vec<Fetched>,
}

impl Processors<'_> {
    fn take_all(&mut self) {
        while let Some(f) = self
            .capsule
            .fetch(&[self.queue], &Interrupt::new())
            .unwrap()
        {
            self.running.push(f);
            let busy: usize = redis().llen(keys::busy(self.queue)).unwrap();
            let floor: u64 = redis().get(keys::limit(self.queue)).unwrap();
            let limit = in_force(self.queue).unwrap_or(floor);
            assert!(busy as u64 <= limit, "{busy} running, {limit} in force");
        }
    }

    /// One finishes, its thread fetches again (a hand-over, if any is
    /// tried), then the others.
    fn finish_one(&mut self) {
        let done = self.running.remove(0);
        self.capsule.acknowledge(self.queue, done.job);
        self.take_all();
    }

    fn back_off_one(&mut self) {
        let job = self.running.pop().unwrap().job;
        let request = BackOff {
            limit: format!("class:Api{}", self.queue),
            carried: false,
            who: format!("Api{}", self.queue),
            jid: "j".to_owned(),
            seconds: Some(0.05),
        };
        self.capsule
            .back_off(self.queue, job, request, &Interrupt::new())
            .unwrap();
    }
}

/// It grows by one a round while reached, up to its ceiling; a back-off of
/// one of its jobs (a class that declares no limit) shrinks it, never
/// below its floor; no fetch or hand-over ever runs more than its limit in
/// force.
#[test]
fn a_queue_limit_grows_while_reached_and_shrinks_at_a_back_off() {
    let q = adaptive_queue("grows", "2..4", 40);
    let c = processor();
    let mut p = Processors {
        capsule: &c,
        queue: &q,
        running: vec![],
    };
    p.take_all();
    assert_eq!(p.running.len(), 2, "its floor");
    assert_eq!(in_force(&q), Some(2), "reached: its first round starts");
    p.finish_one();
    assert_eq!(
        (p.running.len(), in_force(&q)),
        (2, Some(2)),
        "within the round"
    );
    sleep(ROUND);
    p.finish_one();
    assert_eq!((p.running.len(), in_force(&q)), (3, Some(3)), "one more");
    p.finish_one();
    p.finish_one();
    assert_eq!(p.running.len(), 3, "once a round");
    for _ in 0..3 {
        sleep(ROUND);
        p.finish_one();
    }
    assert_eq!((p.running.len(), in_force(&q)), (4, Some(4)), "its ceiling");
    p.back_off_one();
    assert_eq!(in_force(&q), Some(3), "4 x 0.75");
    p.take_all();
    assert_eq!(p.running.len(), 3);
    p.back_off_one();
    assert_eq!(in_force(&q), Some(2), "3 x 0.75, never below its floor");
    p.back_off_one();
    assert_eq!(in_force(&q), Some(2));
    // Two rounds after the last back-off, it grows again.
    sleep(ROUND);
    p.take_all();
    p.finish_one();
    assert_eq!(in_force(&q), Some(2), "a round after a back-off");
    sleep(ROUND);
    p.finish_one();
    assert_eq!(in_force(&q), Some(3), "two rounds after");
}

/// Reached with no job waiting, it does not grow; its state expires after
/// ten minutes without a change, and without it the limit is its floor
/// again.
#[test]
fn a_queue_limit_grows_only_with_jobs_waiting_and_is_forgotten_when_idle() {
    let q = adaptive_queue("idle", "1..5", 1);
    let c = processor();
    let mut p = Processors {
        capsule: &c,
        queue: &q,
        running: vec![],
    };
    p.take_all();
    sleep(ROUND);
    p.finish_one();
    assert_eq!((p.running.len(), in_force(&q)), (0, None), "none waited");
    push_jobs(&q, &[job(&q, "w0"), job(&q, "w1")]);
    p.take_all();
    assert_eq!((p.running.len(), in_force(&q)), (1, Some(1)), "one waits");
    let ttl: i64 = redis().pttl(keys::adaptive(&q)).unwrap();
    assert!((590_000..=600_000).contains(&ttl), "{ttl}");
    p.running.clear();
    let _: () = redis().del(keys::busy(&q)).unwrap();
    // Changed now: it does not grow in this round.
    let (secs, micros): (u64, u64) = redis::cmd("TIME").query(&mut redis()).unwrap();
    let state = format!("4 {}", secs * 1_000_000 + micros);
    let _: () = redis().set(keys::adaptive(&q), state).unwrap();
    push_jobs(
        &q,
        &(0..6)
            .map(|i| job(&q, &format!("k{i}")))
            .collect::<Vec<_>>(),
    );
    p.take_all();
    assert_eq!(p.running.len(), 4, "its limit in force");
    assert_eq!(in_force(&q), Some(4));
    let _: () = redis().del(keys::adaptive(&q)).unwrap();
    p.running.clear();
    let _: () = redis().del(keys::busy(&q)).unwrap();
    p.take_all();
    assert_eq!(p.running.len(), 1, "forgotten: its floor");
}

/// A limit set at run time (not the range's floor) holds instead of the
/// range; so does its floor where the range is broken; neither grows.
#[test]
fn a_limit_set_at_run_time_or_a_broken_range_holds_its_value() {
    for (label, limit, range) in [("set", "3", "1..8"), ("broken", "2", "2..1")] {
        let q = adaptive_queue(label, range, 20);
        let _: () = redis().set(keys::limit(&q), limit).unwrap();
        let c = processor();
        let mut p = Processors {
            capsule: &c,
            queue: &q,
            running: vec![],
        };
        let _: () = redis().set(keys::adaptive(&q), "8 0").unwrap();
        let held: usize = limit.parse().unwrap();
        while let Some(f) = c.fetch(&[q.as_str()], &Interrupt::new()).unwrap() {
            p.running.push(f);
        }
        assert_eq!(p.running.len(), held, "{label}");
        sleep(ROUND);
        p.running.remove(0);
        let done = c.fetch(&[q.as_str()], &Interrupt::new()).unwrap();
        assert!(done.is_none(), "{label}: no more");
        assert_eq!(in_force(&q), Some(8), "{label}: untouched");
    }
}
