//! Back-offs (src/lua/back_off.lua) against a real Redis: a job limit that
//! backs off starts no job until its back-off ends, whether its next job
//! comes through the fetch script or a hand-over; the job that backed off
//! waits parked, first in line, its slots freed; a class that declares no
//! limit backs off in its queue.

mod support;

use std::thread::sleep;
use std::time::Duration;

use limit_fetch_core::{keys, BackOff, Capsule, Fetched, Interrupt};
use redis::Commands;
use support::{capsule_whose_acks_ride, jid_of, push_jobs, queue, redis};

fn limited(q: &str, jid: &str, id: &str, concurrency: u64) -> String {
    format!(
        r#"{{"limit_fetch":[{{"id":"{id}","concurrency":{concurrency}}}],"queue":"{q}","class":"Sync","args":[1],"jid":"{jid}"}}"#
    )
}

fn plain(q: &str, jid: &str, class: &str) -> String {
    format!(r#"{{"queue":"{q}","class":"{class}","args":[],"jid":"{jid}"}}"#)
}

fn jid(fetched: &Option<Fetched>) -> Option<String> {
    fetched
        .as_ref()
        .map(|f| jid_of(&String::from_utf8_lossy(&f.job)))
}

fn fetch(capsule: &Capsule, q: &str) -> Option<Fetched> {
    capsule.fetch(&[q], &Interrupt::new()).unwrap()
}

fn processor() -> Capsule {
    let capsule = capsule_whose_acks_ride();
    capsule.register(&Interrupt::new()).unwrap();
    capsule
}

fn back_off(id: &str, carried: bool, who: &str, seconds: f64) -> BackOff {
    BackOff {
        limit: id.to_owned(),
        carried,
        who: who.to_owned(),
        jid: "j".to_owned(),
        seconds: Some(seconds),
    }
}

/// In a run of a limit's jobs (hand-overs pass the slot from one to the
/// next), a back-off by another process stops the run at its next job,
/// which waits parked until the back-off ends.
#[test]
fn a_back_off_stops_a_run_of_hand_overs() {
    let q = queue("run");
    let id = format!("key:Run#{q}");
    let jobs: Vec<String> = (0..6)
        .map(|i| limited(&q, &format!("r{i}"), &id, 2))
        .collect();
    push_jobs(&q, &jobs);
    let c = processor();
    let mut held = fetch(&c, &q);
    for _ in 0..3 {
        c.acknowledge(&q, held.take().unwrap().job);
        held = fetch(&c, &q);
    }
    let before = c.hand_overs();
    c.acknowledge(&q, held.take().unwrap().job);
    held = fetch(&c, &q);
    assert_eq!(c.hand_overs() - before, 1, "the run hands over");
    c.limits()
        .back_off(&back_off(&id, true, "console", 0.5), &Interrupt::new())
        .unwrap();
    c.acknowledge(&q, held.take().unwrap().job);
    let before = c.hand_overs();
    let next = fetch(&c, &q);
    assert_eq!(c.hand_overs() - before, 1, "the hand-over was tried");
    assert_eq!(jid(&next), None, "nothing starts while it backs off");
    assert_eq!(redis().llen::<_, usize>(keys::parked(&id)).unwrap(), 1);
    assert_eq!(redis().llen::<_, usize>(keys::job_busy(&id)).unwrap(), 0);
    sleep(Duration::from_millis(550));
    assert_eq!(jid(&fetch(&c, &q)).as_deref(), Some("r5"));
}

/// The job that backs off goes back parked, first in line, its slots
/// freed, and starts again first once the back-off ends.
#[test]
fn the_job_that_backs_off_waits_parked_first_in_line() {
    let q = queue("first");
    let id = format!("key:First#{q}");
    push_jobs(&q, &[limited(&q, "a", &id, 1), limited(&q, "b", &id, 1)]);
    let c = processor();
    let a = fetch(&c, &q).unwrap();
    assert_eq!(jid(&fetch(&c, &q)), None, "b parked behind a's slot");
    let done = c
        .back_off(
            &q,
            a.job,
            back_off(&id, true, "Sync", 0.3),
            &Interrupt::new(),
        )
        .unwrap();
    assert!(done.parked);
    assert!(done.ends_in > Duration::from_millis(250));
    let parked: Vec<String> = redis().lrange(keys::parked(&id), 0, -1).unwrap();
    let order: Vec<String> = parked.iter().map(|j| jid_of(j)).collect();
    assert_eq!(
        order,
        ["b", "a"],
        "a is the oldest: on the right, first out"
    );
    assert_eq!(redis().llen::<_, usize>(keys::job_busy(&id)).unwrap(), 0);
    assert_eq!(redis().llen::<_, usize>(keys::busy(&q)).unwrap(), 0);
    assert_eq!(jid(&fetch(&c, &q)), None);
    sleep(Duration::from_millis(350));
    assert_eq!(jid(&fetch(&c, &q)).as_deref(), Some("a"));
}

/// A class that declares no limit backs off in its queue: its jobs are set
/// aside there, another class's run, and they go back when it ends.
#[test]
fn a_class_without_a_limit_backs_off_in_its_queue() {
    let q = queue("plain");
    let id = "class:Plain";
    push_jobs(
        &q,
        &[
            plain(&q, "p1", "Plain"),
            plain(&q, "o1", "Other"),
            plain(&q, "p2", "Plain"),
        ],
    );
    let c = processor();
    let p1 = fetch(&c, &q).unwrap();
    c.back_off(
        &q,
        p1.job,
        back_off(id, false, "Plain", 0.4),
        &Interrupt::new(),
    )
    .unwrap();
    assert_eq!(jid(&fetch(&c, &q)).as_deref(), Some("o1"));
    assert_eq!(jid(&fetch(&c, &q)), None, "p2 set aside");
    assert_eq!(redis().llen::<_, usize>(keys::parked(id)).unwrap(), 2);
    sleep(Duration::from_millis(450));
    assert_eq!(jid(&fetch(&c, &q)).as_deref(), Some("p1"));
    assert_eq!(jid(&fetch(&c, &q)).as_deref(), Some("p2"));
}

fn adaptive(q: &str, jid: &str, id: &str, floor: u64, ceiling: u64) -> String {
    format!(
        r#"{{"limit_fetch":[{{"id":"{id}","concurrency":{floor},"ceiling":{ceiling}}}],"queue":"{q}","class":"Sync","args":[1],"jid":"{jid}"}}"#
    )
}

fn in_force(id: &str) -> Option<u64> {
    let raw: Option<String> = redis().get(keys::job_adaptive(id)).unwrap();
    raw.and_then(|r| r.split(' ').next().and_then(|v| v.parse().ok()))
}

/// An adaptive limit starts at its floor, grows by one a round (half a
/// second) while it is reached, up to its ceiling, and shrinks at a
/// back-off, never below its floor.
#[test]
fn an_adaptive_limit_grows_while_reached_and_shrinks_at_a_back_off() {
    let q = queue("adaptive");
    let id = format!("key:Adaptive#{q}");
    let jobs: Vec<String> = (0..12)
        .map(|i| adaptive(&q, &format!("a{i}"), &id, 2, 4))
        .collect();
    push_jobs(&q, &jobs);
    let c = processor();
    let mut running: Vec<Fetched> = Vec::new();
    let take_all = |running: &mut Vec<Fetched>| {
        while let Some(f) = fetch(&c, &q) {
            running.push(f);
        }
    };
    // As Sidekiq's processors do: one finishes, its thread fetches again.
    let finish_one = |running: &mut Vec<Fetched>| {
        let done = running.remove(0);
        c.acknowledge(&q, done.job);
        take_all(running);
    };
    take_all(&mut running);
    assert_eq!(running.len(), 2, "its floor");
    assert_eq!(in_force(&id), Some(2), "reached: its first round starts");
    finish_one(&mut running);
    assert_eq!(
        (running.len(), in_force(&id)),
        (2, Some(2)),
        "within the round"
    );
    sleep(Duration::from_millis(520));
    finish_one(&mut running);
    assert_eq!((running.len(), in_force(&id)), (3, Some(3)), "one more");
    finish_one(&mut running);
    assert_eq!(running.len(), 3, "once a round");
    for _ in 0..2 {
        sleep(Duration::from_millis(520));
        finish_one(&mut running);
    }
    assert_eq!((running.len(), in_force(&id)), (4, Some(4)), "its ceiling");
    let job = running.pop().unwrap().job;
    c.back_off(&q, job, back_off(&id, true, "Sync", 0.1), &Interrupt::new())
        .unwrap();
    assert_eq!(in_force(&id), Some(3), "4 x 0.75");
    let job = running.pop().unwrap().job;
    c.back_off(&q, job, back_off(&id, true, "Sync", 0.1), &Interrupt::new())
        .unwrap();
    assert_eq!(in_force(&id), Some(2), "3 x 0.75, never below its floor");
}
