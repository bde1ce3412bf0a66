//! The hand-over of jobs that carry job limits (src/capsule/hand_over/),
//! against a real Redis: in a run of jobs carrying the same limits (a
//! class's, a hot key's), a processor's next job takes the finished job's
//! slots without the fetch script, from the queue or, once the limit has
//! parked jobs, from those, oldest first; anything else is left to the
//! script, which frees the passed slots and decides as a fetch would. A
//! run's limit stays in the capsule's set of run limits while the capsule
//! holds a slot of it, so that a reap frees that slot.

mod support;

use limit_fetch_core::{keys, Capsule, Fetched, Interrupt};
use redis::Commands;
use support::{capsule, capsule_whose_acks_ride, jid_of, next, push_jobs, queue, redis};

/// A job of queue `q` carrying job limit `id` of `concurrency`, as the
/// client middleware writes it.
fn limited(q: &str, jid: &str, id: &str, concurrency: u64) -> String {
    format!(
        r#"{{"limit_fetch":[{{"id":"{id}","concurrency":{concurrency}}}],"queue":"{q}","class":"Sync","args":[1],"jid":"{jid}"}}"#
    )
}

fn jid(fetched: &Fetched) -> String {
    jid_of(&String::from_utf8_lossy(&fetched.job))
}

/// A registered capsule (a hand-over passes slots only while its heartbeat
/// key exists) whose acknowledgements ride on its fetches.
fn processor() -> Capsule {
    let capsule = capsule_whose_acks_ride();
    capsule.register(&Interrupt::new()).unwrap();
    capsule
}

/// Pushes `n` jobs of limit `id`, oldest first, jids `<prefix>0`, `<prefix>1`...
fn push_run(q: &str, prefix: &str, id: &str, n: usize, concurrency: u64) {
    let jobs: Vec<String> = (0..n)
        .map(|i| limited(q, &format!("{prefix}{i}"), id, concurrency))
        .collect();
    push_jobs(q, &jobs);
}

fn len(key: &str) -> usize {
    redis().llen(key).unwrap()
}

/// A run of a job limit's jobs: after the first two (the script's, which
/// start the run), each next job takes the slots of the one before.
#[test]
fn a_run_of_jobs_of_one_job_limit_is_handed_over() {
    let q = queue("run");
    let id = format!("class:Run-{q}");
    push_run(&q, "r", &id, 6, 2);
    let c = processor();
    let mut held = next(&c, &q, None);
    held = next(&c, &q, held);
    let before = c.hand_overs();
    for i in 2..6 {
        held = next(&c, &q, held);
        assert_eq!(jid(held.as_ref().expect("a job")), format!("r{i}"));
        assert_eq!(len(&keys::job_busy(&id)), 1, "one slot, passed on");
        assert_eq!(len(&keys::busy(&q)), 1);
        let named: Vec<String> = redis().smembers(keys::capsule_limits(c.uuid())).unwrap();
        assert_eq!(named, vec![id.clone()]);
    }
    assert_eq!(c.hand_overs() - before, 4);
    assert!(next(&c, &q, held).is_none());
    assert_eq!(len(&keys::job_busy(&id)), 0);
    assert_eq!(len(&keys::busy(&q)), 0);
    // The run named its limit in the capsule's set (reap.lua) while it
    // passed its slot; the script that ended it, finding no slot of it
    // left, took it out.
    assert!(!redis()
        .exists::<_, bool>(keys::capsule_limits(c.uuid()))
        .unwrap());
}

/// A hot key: its jobs wait parked while one runs. The processor that
/// finishes one takes the next parked job, oldest first, by hand-over once
/// the run has found them parked.
#[test]
fn a_hot_keys_parked_jobs_go_oldest_first_to_the_processor_that_frees_the_slot() {
    let q = queue("hot");
    let id = format!("key:Hot#{q}");
    push_run(&q, "h", &id, 6, 1);
    let a = processor();
    let mut held = next(&a, &q, None);
    assert_eq!(jid(held.as_ref().unwrap()), "h0");
    // Another capsule finds the key full and parks the rest.
    assert!(capsule()
        .fetch(&[q.as_str()], &Interrupt::new())
        .unwrap()
        .is_none());
    assert_eq!(len(&keys::parked(&id)), 5);
    // Younger jobs of the key, queued behind the parked ones.
    push_jobs(&q, &[limited(&q, "h6", &id, 1), limited(&q, "h7", &id, 1)]);
    let (before, trips) = (a.hand_overs(), a.round_trips());
    for i in 1..8 {
        held = next(&a, &q, held);
        assert_eq!(jid(held.as_ref().expect("a job")), format!("h{i}"));
        assert_eq!(len(&keys::job_busy(&id)), 1);
        assert_eq!(len(&keys::parked(&id)), 5_usize.saturating_sub(i));
    }
    // h1: the script (no run yet), which says it took a parked job; h2,
    // h3, h4, h5: hand-overs from the parked ones; h6: one that finds them
    // gone, then the script; h7 from the queue again.
    assert_eq!(a.hand_overs() - before, 6);
    assert_eq!(a.round_trips() - trips, 8);
    assert!(next(&a, &q, held).is_none());
    assert_eq!(len(&keys::job_busy(&id)), 0);
    let parked: Vec<String> = redis().smembers(keys::LIMITS_WITH_PARKED).unwrap();
    assert!(!parked.contains(&id), "{id} still noted parked");
}

/// A next job carrying other limits: the script decides it, and frees the
/// slot the finished job passed.
#[test]
fn a_next_job_of_other_limits_is_left_to_the_script_which_frees_the_passed_slot() {
    let q = queue("other");
    let (a, b) = (format!("key:A#{q}"), format!("key:B#{q}"));
    push_jobs(
        &q,
        &[
            limited(&q, "a0", &a, 1),
            limited(&q, "a1", &a, 1),
            limited(&q, "b0", &b, 1),
        ],
    );
    let c = processor();
    let held = next(&c, &q, None);
    let held = next(&c, &q, held);
    let before = c.hand_overs();
    let third = next(&c, &q, held).expect("b0");
    assert_eq!(jid(&third), "b0");
    assert_eq!(c.hand_overs() - before, 1, "tried");
    assert_eq!(len(&keys::job_busy(&a)), 0, "a's slot freed");
    assert_eq!(len(&keys::job_busy(&b)), 1);
    assert_eq!(len(&keys::busy(&q)), 1);
    assert_eq!(len(&keys::in_progress(c.uuid(), &q)), 1);
}

/// A job limit lowered at run time below the jobs it has running: the
/// hand-over does not keep its slot, and the script parks the next job.
#[test]
fn a_job_limit_lowered_by_hand_stops_the_hand_over() {
    let q = queue("lowered");
    let id = format!("class:Lowered-{q}");
    push_run(&q, "l", &id, 4, 3);
    let c = processor();
    let held = next(&c, &q, None);
    let held = next(&c, &q, held);
    let _: () = redis().set(keys::job_limit(&id), 0).unwrap();
    let before = c.hand_overs();
    assert!(next(&c, &q, held).is_none());
    assert_eq!(c.hand_overs() - before, 1, "tried");
    assert_eq!(len(&keys::job_busy(&id)), 0);
    assert_eq!(len(&keys::busy(&q)), 0);
    assert_eq!(len(&keys::in_progress(c.uuid(), &q)), 0);
    let parked: Vec<String> = redis().lrange(keys::parked(&id), 0, -1).unwrap();
    let parked: Vec<String> = parked.iter().map(|j| jid_of(j)).collect();
    assert_eq!(parked, ["l3", "l2"], "parked in order, the oldest last");
}

/// A parked job the hand-over took but may not start goes back where it
/// was, the oldest parked, and nothing overtakes it.
#[test]
fn a_parked_job_the_hand_over_may_not_start_goes_back_first_in_line() {
    let q = queue("parked-back");
    let id = format!("key:Back#{q}");
    push_run(&q, "p", &id, 6, 1);
    let a = processor();
    let mut held = next(&a, &q, None);
    assert!(capsule()
        .fetch(&[q.as_str()], &Interrupt::new())
        .unwrap()
        .is_none());
    for _ in 1..3 {
        held = next(&a, &q, held);
    }
    assert_eq!(jid(held.as_ref().unwrap()), "p2");
    // The run now takes from the parked jobs: p3 is next.
    let _: () = redis().set(keys::job_limit(&id), 0).unwrap();
    let before = a.hand_overs();
    assert!(next(&a, &q, held).is_none());
    assert_eq!(a.hand_overs() - before, 1, "tried");
    let parked: Vec<String> = redis().lrange(keys::parked(&id), 0, -1).unwrap();
    let parked: Vec<String> = parked.iter().map(|j| jid_of(j)).collect();
    assert_eq!(parked, ["p5", "p4", "p3"]);
    assert_eq!(len(&keys::job_busy(&id)), 0);
    assert_eq!(len(&keys::in_progress(a.uuid(), &q)), 0);
    // Room again: a beat sends the oldest back, first.
    let _: () = redis().del(keys::job_limit(&id)).unwrap();
    assert_eq!(a.beat(&Interrupt::new()).unwrap().released, 1);
    let fetched = a.fetch(&[q.as_str()], &Interrupt::new()).unwrap();
    assert_eq!(jid(&fetched.expect("p3")), "p3");
}

/// Jobs of the run's limit parked mid-run, by another capsule that found
/// the limit full: the next hand-over from the queue finds them (the
/// `EXISTS` after the move) and leaves the job it moved to the script,
/// which puts it back behind them. The oldest parked job goes first; the
/// run then takes the parked ones, and the queue's after them.
#[test]
fn a_run_whose_limit_gets_parked_jobs_midway_takes_them_before_the_queues() {
    let q = queue("midway");
    let id = format!("key:Midway#{q}");
    push_run(&q, "m", &id, 2, 1);
    let a = processor();
    let held = next(&a, &q, None);
    let mut held = next(&a, &q, held);
    assert_eq!(jid(held.as_ref().unwrap()), "m1", "the run has begun");
    // Its key full, another capsule parks the next two; a younger job of
    // the key is queued behind them.
    push_jobs(&q, &[limited(&q, "m2", &id, 1), limited(&q, "m3", &id, 1)]);
    assert!(capsule()
        .fetch(&[q.as_str()], &Interrupt::new())
        .unwrap()
        .is_none());
    assert_eq!(len(&keys::parked(&id)), 2);
    push_jobs(&q, &[limited(&q, "m4", &id, 1)]);
    let before = a.hand_overs();
    for i in 2..5 {
        held = next(&a, &q, held);
        assert_eq!(
            jid(held.as_ref().expect("a job")),
            format!("m{i}"),
            "a job overtook the parked ones"
        );
        assert_eq!(len(&keys::job_busy(&id)), 1);
    }
    // m2: a hand-over from the queue, which found parked jobs, then the
    // script; m3 from the parked ones, m4 from the queue again.
    assert_eq!(a.hand_overs() - before, 3);
    assert!(next(&a, &q, held).is_none());
    assert_eq!(len(&keys::job_busy(&id)), 0);
}

/// A run that ends (its next job carries other limits) while the capsule
/// still holds another slot of the run's limit: the limit stays in the
/// capsule's set of run limits, so that a reap of the capsule frees that
/// slot too. It may be held by no job in the capsule's in-progress lists:
/// another of its processors in a run of the same limit, whose hand-over
/// moved a job of other limits, which its script has yet to decide.
#[test]
fn a_run_that_ends_while_the_capsule_holds_another_slot_of_its_limit_keeps_it_named() {
    let q = queue("named");
    let (id, other) = (format!("class:Named-{q}"), format!("key:Other#{q}"));
    push_jobs(
        &q,
        &[
            limited(&q, "n0", &id, 3),
            limited(&q, "n1", &id, 3),
            limited(&q, "o0", &other, 3),
        ],
    );
    let c = processor();
    let held = next(&c, &q, None);
    let held = next(&c, &q, held);
    assert_eq!(jid(held.as_ref().unwrap()), "n1", "the run has begun");
    // The other processor, between its hand-over and its script (built by
    // hand: its hand-over's SADD, and a slot no job of the capsule holds).
    let mut conn = redis();
    let _: () = conn.rpush(keys::job_busy(&id), c.uuid()).unwrap();
    let _: () = conn.sadd(keys::capsule_limits(c.uuid()), &id).unwrap();
    let before = c.hand_overs();
    let third = next(&c, &q, held).expect("o0");
    assert_eq!(jid(&third), "o0");
    assert_eq!(c.hand_overs() - before, 1, "tried");
    assert_eq!(len(&keys::job_busy(&id)), 1, "the run's slot freed");
    let named: Vec<String> = conn.smembers(keys::capsule_limits(c.uuid())).unwrap();
    assert!(
        named.contains(&id),
        "{id} left the capsule's set while it holds a slot of it: {named:?}"
    );
    // The capsule goes: every slot it held is freed, the other processor's
    // of the run's limit included.
    c.deregister(&[q.as_str()], &Interrupt::new()).unwrap();
    assert_eq!(len(&keys::job_busy(&id)), 0, "a slot of {id} was left");
    assert_eq!(len(&keys::job_busy(&other)), 0);
}
