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
    let jobs: Vec<String> = (0..6).map(|i| limited(&q, &format!("r{i}"), &id, 2)).collect();
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
        .back_off(&q, a.job, back_off(&id, true, "Sync", 0.3), &Interrupt::new())
        .unwrap();
    assert!(done.parked);
    assert!(done.ends_in > Duration::from_millis(250));
    let parked: Vec<String> = redis().lrange(keys::parked(&id), 0, -1).unwrap();
    let order: Vec<String> = parked.iter().map(|j| jid_of(j)).collect();
    assert_eq!(order, ["b", "a"], "a is the oldest: on the right, first out");
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
        &[plain(&q, "p1", "Plain"), plain(&q, "o1", "Other"), plain(&q, "p2", "Plain")],
    );
    let c = processor();
    let p1 = fetch(&c, &q).unwrap();
    c.back_off(&q, p1.job, back_off(id, false, "Plain", 0.4), &Interrupt::new())
        .unwrap();
    assert_eq!(jid(&fetch(&c, &q)).as_deref(), Some("o1"));
    assert_eq!(jid(&fetch(&c, &q)), None, "p2 set aside");
    assert_eq!(redis().llen::<_, usize>(keys::parked(id)).unwrap(), 2);
    sleep(Duration::from_millis(450));
    assert_eq!(jid(&fetch(&c, &q)).as_deref(), Some("p1"));
    assert_eq!(jid(&fetch(&c, &q)).as_deref(), Some("p2"));
}
