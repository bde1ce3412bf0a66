//! The hand-over (src/capsule/hand_over/), against a real Redis: a
//! processor's next job of the queue it just finished a job of is taken
//! under that job's slot without the fetch script; a change to the queue's
//! limits or pause (even one written by hand), an empty queue, or a next job
//! carrying job limits is left to the script, which decides as a fetch would.

mod support;

use limit_fetch_core::{keys, Interrupt};
use redis::Commands;
use support::{capsule, holding_the_second, jid_of, next, push_jobs, push_unique, queue, redis};

/// Redis's command counts are the server's: one test at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn turn() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// How many times Redis ran `command` (lowercase).
fn calls(command: &str) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut redis())
        .unwrap();
    let prefix = format!("cmdstat_{command}:calls=");
    info.lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |n| n.parse().unwrap())
}

fn len(key: &str) -> usize {
    redis().llen(key).unwrap()
}

fn front_jid(q: &str) -> String {
    let job: String = redis().lindex(keys::queue(q), -1).unwrap();
    jid_of(&job)
}

#[test]
fn a_processors_next_job_of_the_same_queue_is_handed_over() {
    let _turn = turn();
    let q = queue("handover");
    let _: () = redis().set(keys::limit(&q), 2).unwrap();
    push_unique(&q, 6);
    let (capsule, mut held) = holding_the_second(&q);
    let before = capsule.hand_overs();
    let hdels = calls("hdel");
    for _ in 0..3 {
        held = next(&capsule, &q, held);
        assert!(held.is_some());
        assert_eq!(len(&keys::busy(&q)), 1, "one slot, passed on");
    }
    assert_eq!(capsule.hand_overs() - before, 3);
    // The first, after the script, finds no recoveries counted: the others
    // leave their HDEL out.
    assert_eq!(calls("hdel") - hdels, 1);
    let uuid = capsule.uuid().to_owned();
    assert_eq!(len(&keys::in_progress(&uuid, &q)), 1);
    capsule.acknowledge(&q, held.unwrap().job);
    capsule.flush(&Interrupt::new()).unwrap();
    assert_eq!(len(&keys::busy(&q)), 0);
    assert_eq!(len(&keys::in_progress(&uuid, &q)), 0);
}

#[test]
fn a_limit_lowered_by_hand_stops_the_hand_over_and_the_job_goes_back_first() {
    let _turn = turn();
    let q = queue("lowered");
    let _: () = redis().set(keys::limit(&q), 2).unwrap();
    push_unique(&q, 4);
    let (capsule, held) = holding_the_second(&q);
    let _: () = redis().set(keys::limit(&q), 0).unwrap();
    let before = capsule.hand_overs();
    assert!(next(&capsule, &q, held).is_none());
    assert_eq!(capsule.hand_overs() - before, 1, "it was tried");
    assert_eq!(len(&keys::busy(&q)), 0);
    assert_eq!(len(&keys::in_progress(capsule.uuid(), &q)), 0);
    assert_eq!(len(&keys::queue(&q)), 2);
    assert_eq!(front_jid(&q), format!("{q}-2"));
}

#[test]
fn a_pause_stops_the_hand_over() {
    let _turn = turn();
    let q = queue("paused");
    push_unique(&q, 4);
    let (capsule, held) = holding_the_second(&q);
    let _: () = redis().set(keys::paused(&q), 1).unwrap();
    assert!(next(&capsule, &q, held).is_none());
    assert_eq!(len(&keys::busy(&q)), 0);
    assert_eq!(len(&keys::in_progress(capsule.uuid(), &q)), 0);
    assert_eq!(front_jid(&q), format!("{q}-2"));
}

#[test]
fn a_limit_raised_keeps_the_hand_over() {
    let _turn = turn();
    let q = queue("raised");
    let _: () = redis().set(keys::limit(&q), 1).unwrap();
    push_unique(&q, 4);
    let (capsule, held) = holding_the_second(&q);
    let _: () = redis().set(keys::limit(&q), 5).unwrap();
    let before = capsule.hand_overs();
    let third = next(&capsule, &q, held).expect("taken");
    assert_eq!(capsule.hand_overs() - before, 1);
    assert_eq!(
        jid_of(&String::from_utf8_lossy(&third.job)),
        format!("{q}-2")
    );
    assert_eq!(len(&keys::busy(&q)), 1);
}

/// A limit raised, filled by others, then lowered back to the value the
/// hand-over's thread last saw: the queue is over its limit, and the
/// hand-over must not keep its slot.
#[test]
fn a_queue_left_over_a_limit_set_back_gets_no_hand_over() {
    let _turn = turn();
    let q = queue("over");
    let _: () = redis().set(keys::limit(&q), 2).unwrap();
    push_unique(&q, 8);
    let (a, held) = holding_the_second(&q);
    let _: () = redis().set(keys::limit(&q), 5).unwrap();
    let b = capsule();
    for _ in 0..3 {
        assert!(b.fetch(&[q.as_str()], &Interrupt::new()).unwrap().is_some());
    }
    assert_eq!(len(&keys::busy(&q)), 4);
    let _: () = redis().set(keys::limit(&q), 2).unwrap();
    assert!(next(&a, &q, held).is_none(), "4 hold slots of 2");
    assert_eq!(len(&keys::busy(&q)), 3, "its slot freed, b's kept");
    assert_eq!(len(&keys::in_progress(a.uuid(), &q)), 0);
    assert_eq!(front_jid(&q), format!("{q}-5"));
}

#[test]
fn a_queue_with_a_process_limit_is_left_to_the_script() {
    let _turn = turn();
    let q = queue("process");
    let _: () = redis().set(keys::process_limit(&q), 3).unwrap();
    push_unique(&q, 4);
    let (capsule, held) = holding_the_second(&q);
    let before = capsule.hand_overs();
    assert!(next(&capsule, &q, held).is_some());
    assert_eq!(capsule.hand_overs() - before, 0, "not even tried");
    assert_eq!(len(&keys::busy(&q)), 1);
}

/// An adaptive limit grows where the script finds it reached: its queue's
/// jobs are all the script's.
#[test]
fn a_queue_with_an_adaptive_limit_is_left_to_the_script() {
    let _turn = turn();
    let q = queue("adaptive");
    let _: () = redis().set(keys::limit(&q), 2).unwrap();
    let _: () = redis().set(keys::limit_range(&q), "2..4").unwrap();
    push_unique(&q, 4);
    let (capsule, held) = holding_the_second(&q);
    let before = capsule.hand_overs();
    assert!(next(&capsule, &q, held).is_some());
    assert_eq!(capsule.hand_overs() - before, 0, "not even tried");
    assert_eq!(len(&keys::busy(&q)), 1);
}

#[test]
fn an_empty_queue_frees_the_slot_the_hand_over_held() {
    let _turn = turn();
    let q = queue("drained");
    let _: () = redis().set(keys::limit(&q), 3).unwrap();
    push_unique(&q, 2);
    let (capsule, held) = holding_the_second(&q);
    let before = capsule.hand_overs();
    assert!(next(&capsule, &q, held).is_none());
    assert_eq!(capsule.hand_overs() - before, 1);
    assert_eq!(len(&keys::busy(&q)), 0);
    assert_eq!(len(&keys::in_progress(capsule.uuid(), &q)), 0);
}

#[test]
fn a_next_job_with_a_full_job_limit_is_parked_not_run() {
    let _turn = turn();
    let q = queue("keyed");
    let id = format!("class:Keyed-{q}");
    let keyed = format!(
        r#"{{"limit_fetch":[{{"id":"{id}","concurrency":0}}],"queue":"{q}","class":"Keyed","jid":"{q}-keyed"}}"#
    );
    let plain = |n: u32| format!(r#"{{"queue":"{q}","class":"Plain","jid":"{q}-{n}"}}"#);
    push_jobs(&q, &[plain(0), plain(1), keyed.clone()]);
    let (capsule, held) = holding_the_second(&q);
    assert!(next(&capsule, &q, held).is_none());
    let parked: Vec<String> = redis().lrange(keys::parked(&id), 0, -1).unwrap();
    assert_eq!(parked, vec![keyed]);
    assert_eq!(len(&keys::busy(&q)), 0);
    assert_eq!(len(&keys::job_busy(&id)), 0);
    assert_eq!(len(&keys::in_progress(capsule.uuid(), &q)), 0);
}

#[test]
fn a_process_limit_set_under_a_hand_over_stops_it() {
    let _turn = turn();
    let q = queue("process-later");
    push_unique(&q, 4);
    let (capsule, held) = holding_the_second(&q);
    let _: () = redis().set(keys::process_limit(&q), 0).unwrap();
    let before = capsule.hand_overs();
    assert!(next(&capsule, &q, held).is_none());
    assert_eq!(capsule.hand_overs() - before, 1, "it was tried");
    assert_eq!(len(&keys::busy(&q)), 0);
    assert_eq!(front_jid(&q), format!("{q}-2"));
}

/// A reaper frees the slots of a capsule without its heartbeat key: a slot
/// a hand-over passed before may be gone, and is not freed again.
#[test]
fn a_capsule_without_its_heartbeat_frees_no_passed_slot_twice() {
    let _turn = turn();
    let q = queue("no-heartbeat");
    push_unique(&q, 2);
    let (capsule, held) = holding_the_second(&q);
    let _: () = redis().del(keys::heartbeat(capsule.uuid())).unwrap();
    assert!(next(&capsule, &q, held).is_none());
    assert_eq!(len(&keys::busy(&q)), 1, "kept, for the beat to reconcile");
    capsule.beat(&Interrupt::new()).unwrap();
    assert_eq!(len(&keys::busy(&q)), 0, "the beat reconciled it");
}

/// A queue found without a limit is not counted by the next hand-overs;
/// a limit set since sends the job to the script, which counts.
#[test]
fn a_limit_set_on_a_queue_without_one_sends_the_hand_over_to_the_script() {
    let _turn = turn();
    let q = queue("unlimited");
    push_unique(&q, 8);
    let (a, mut held) = holding_the_second(&q);
    held = next(&a, &q, held);
    let counted = calls("llen");
    for _ in 0..2 {
        held = next(&a, &q, held);
        assert!(held.is_some());
    }
    assert_eq!(
        calls("llen") - counted,
        0,
        "no count of a queue without a limit"
    );
    assert!(capsule()
        .fetch(&[q.as_str()], &Interrupt::new())
        .unwrap()
        .is_some());
    let _: () = redis().set(keys::limit(&q), 1).unwrap();
    let before = a.hand_overs();
    assert!(next(&a, &q, held).is_none(), "2 hold slots of 1");
    assert_eq!(a.hand_overs() - before, 1, "it was tried");
    assert_eq!(len(&keys::busy(&q)), 1, "its slot freed, the other kept");
    assert_eq!(len(&keys::in_progress(a.uuid(), &q)), 0);
    assert_eq!(front_jid(&q), format!("{q}-6"), "back first in line");
}

/// A fair queue's jobs carry their share, which the script writes into
/// them (lua/fetch/fair_queue.lua): its queue is left to the script.
#[test]
fn a_fair_queue_is_left_to_the_script() {
    let _turn = turn();
    let q = queue("fair");
    let id = keys::fair_queue_id(&q);
    let _: () = redis().set(keys::job_limit(&id), 3).unwrap();
    push_unique(&q, 4);
    let (capsule, held) = holding_the_second(&q);
    let before = capsule.hand_overs();
    let job = next(&capsule, &q, held).expect("the third");
    assert_eq!(capsule.hand_overs() - before, 0, "not even tried");
    let job = String::from_utf8_lossy(&job.job).into_owned();
    assert!(job.contains(&format!(r#""fair":"{id}""#)), "{job}");
    assert_eq!(len(&keys::job_busy(&id)), 1);
}

/// A fair limit set since the thread last saw the queue sends the
/// hand-over's job to the script, which writes its share into it.
#[test]
fn a_fair_limit_set_under_a_hand_over_sends_its_job_to_the_script() {
    let _turn = turn();
    let q = queue("fair-later");
    push_unique(&q, 4);
    let (capsule, held) = holding_the_second(&q);
    let id = keys::fair_queue_id(&q);
    let _: () = redis().set(keys::job_limit(&id), 3).unwrap();
    let before = capsule.hand_overs();
    let job = next(&capsule, &q, held).expect("the third");
    assert_eq!(capsule.hand_overs() - before, 1, "it was tried");
    let job = String::from_utf8_lossy(&job.job).into_owned();
    assert!(job.contains(&format!(r#""fair":"{id}""#)), "{job}");
    assert_eq!(len(&keys::job_busy(&id)), 1, "it holds a slot of the share");
}
