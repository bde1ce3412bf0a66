//! The fetch's first read (lua/fetch/queues.lua's read_ahead): one MGET of
//! the first queue's state, `rate_due` and `recovered`, against a real
//! Redis, one test at a time (INFO commandstats are the server's).
//!
//! - Parked rates not due: no look at `rate_parked`; due, their jobs go.
//! - `rate_due` left wrong by a call that failed partway: later than the
//!   first opening (or gone), the release script that every beat's sweep
//!   runs sets it right, whatever limits it sweeps; earlier, the fetch
//!   that finds nothing due sets it right itself.
//! - No reap counted a recovery (`recovered` absent): an acknowledgement
//!   sends no EXISTS; one counted, the acknowledged job's count is
//!   forgotten.
//! - The state read ahead is the first queue's alone.

mod support;

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use limit_fetch_core::keys;
use limit_fetch_core::Interrupt;
use redis::{Commands, Value};
use support::{capsule, command_calls, function_name, queue, redis};

/// Redis's global keys (rate_parked, rate_due, recovered) and its
/// commandstats are shared: one test at a time.
static TURN: Mutex<()> = Mutex::new(());

fn turn() -> MutexGuard<'static, ()> {
    let guard = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let _: () = redis()
        .del(&[
            keys::RATE_PARKED,
            keys::RATE_DUE,
            keys::RATE_WAKE,
            keys::RECOVERED,
            keys::RECOVERIES,
        ])
        .unwrap();
    guard
}

/// The name Redis knows the gem's function `script` by, once a capsule
/// loaded the library.
fn function(script: &str) -> String {
    let c = capsule();
    let q = queue("first-read-load");
    let _ = c.fetch(&[q.as_str()], &Interrupt::new());
    let _ = c.deregister(&[q.as_str()], &Interrupt::new());
    function_name(script)
}

/// A job of `q`, with a rate of 1 a minute per `limit` if given.
fn job(q: &str, jid: &str, limit: Option<&str>) -> String {
    let limits = limit.map_or(String::new(), |id| {
        format!(r#""limit_fetch":[{{"id":"{id}","rate":[1,60]}}],"#)
    });
    format!(r#"{{{limits}"queue":"{q}","class":"FirstReadJob","args":[],"jid":"{jid}"}}"#)
}

fn sha1(text: &str) -> String {
    sha1_smol::Sha1::from(text).digest().to_string()
}

/// One fetch as the core sends it (src/lua/fetch/state.lua's arguments):
/// no hand-over, `acks` acknowledged, from `queues`; the job taken, if any.
fn fetch(function: &str, uuid: &str, acks: &[(&str, &str)], queues: &[&str]) -> Option<String> {
    let mut cmd = redis::cmd("FCALL");
    cmd.arg(function).arg(0).arg(uuid).arg("0").arg("100");
    cmd.arg(acks.len()).arg(&["", "0", "", "", "", "0"][..]);
    for (q, job) in acks {
        cmd.arg(*q).arg(*job).arg(sha1(job));
    }
    cmd.arg(queues);
    match cmd.query(&mut redis()).unwrap() {
        Value::Array(reply) => match reply.get(1) {
            Some(Value::BulkString(job)) => Some(String::from_utf8_lossy(job).into_owned()),
            _ => None,
        },
        _ => None,
    }
}

/// The commands Redis ran (scripts' included) while `run` ran, by name.
fn commands(run: impl FnOnce()) -> HashMap<String, u64> {
    let mut conn = redis();
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query(&mut conn)
        .unwrap();
    run();
    command_calls(&mut conn)
}

/// A fresh queue holding a job of a fresh limit with a rate of 1 a minute,
/// then another of it, then a plain job; fetched by capsule `uuid` until
/// the first ran and the second is parked behind the rate (its window
/// opens in a minute), the plain one taken. Returns the queue, the limit,
/// the plain job, and the parked one.
fn parked_behind_a_minute(f: &str, uuid: &str, label: &str) -> (String, String, String, String) {
    let q = queue(label);
    let id = format!("key:FirstReadJob#{label}-{}", uuid::Uuid::new_v4());
    let (first, parked, plain) = (
        job(&q, "first", Some(&id)),
        job(&q, "parked", Some(&id)),
        job(&q, "plain", None),
    );
    let _: () = redis()
        .rpush(keys::queue(&q), &[&plain, &parked, &first])
        .unwrap();
    assert_eq!(fetch(f, uuid, &[], &[&q]).as_deref(), Some(first.as_str()));
    let taken = fetch(f, uuid, &[(&q, &first)], &[&q]);
    assert_eq!(
        taken.as_deref(),
        Some(plain.as_str()),
        "the rated job parked, the plain one taken"
    );
    let due: Option<f64> = redis().get(keys::RATE_DUE).unwrap();
    assert!(due.is_some(), "rate_due set as the fetch parked");
    (q, id, plain, parked)
}

fn parked_jobs(id: &str) -> Vec<String> {
    redis().lrange(keys::parked(id), 0, -1).unwrap()
}

#[test]
fn parked_rates_not_due_and_no_recovery_counted_cost_the_fetch_no_command() {
    let _turn = turn();
    let f = function("fetch");
    let uuid = uuid::Uuid::new_v4().to_string();
    let (q, id, plain, _) = parked_behind_a_minute(&f, &uuid, "first-read-costs");
    let mut taken = None;
    let ran = commands(|| taken = fetch(&f, &uuid, &[(&q, &plain)], &[&q]));
    assert_eq!(taken, None);
    let count = |name: &str| ran.get(name).copied().unwrap_or(0);
    assert_eq!(count("zrange"), 0, "rate_parked not read: {ran:?}");
    assert_eq!(count("exists"), 0, "recoveries not looked for: {ran:?}");
    assert_eq!(count("mget"), 1, "one read ahead: {ran:?}");
    assert_eq!(parked_jobs(&id).len(), 1, "still parked");
}

#[test]
fn a_limit_whose_window_opened_sends_its_job_back_through_rate_due() {
    let _turn = turn();
    let f = function("fetch");
    let uuid = uuid::Uuid::new_v4().to_string();
    let (q, id, plain, parked) = parked_behind_a_minute(&f, &uuid, "first-read-opened");
    // The window opens now: as rate_parks notes it (both keys).
    let _: () = redis().zadd(keys::RATE_PARKED, &id, 1).unwrap();
    let _: () = redis().set(keys::RATE_DUE, 1).unwrap();
    let _: () = redis().del(keys::job_starts(&id)).unwrap();
    let taken = fetch(&f, &uuid, &[(&q, &plain)], &[&q]);
    assert_eq!(taken.as_deref(), Some(parked.as_str()));
    let due: Option<String> = redis().get(keys::RATE_DUE).unwrap();
    assert_eq!(due, None, "none parked since");
}

#[test]
fn rate_due_later_than_a_due_window_is_set_right_by_the_beats_release_script() {
    let _turn = turn();
    let f = function("fetch");
    let uuid = uuid::Uuid::new_v4().to_string();
    let release = function("release");
    let (q, id, plain, parked) = parked_behind_a_minute(&f, &uuid, "first-read-late");
    // A call failed between its write of rate_parked and of rate_due: the
    // window opened, rate_due says it is a minute away (or says nothing).
    let _: () = redis().zadd(keys::RATE_PARKED, &id, 1).unwrap();
    let _: () = redis().del(keys::job_starts(&id)).unwrap();
    let _: () = redis().del(keys::RATE_DUE).unwrap();
    // The sweep of another limit (one with nothing parked) runs the
    // release script.
    let _: Value = redis::cmd("FCALL")
        .arg(&release)
        .arg(0)
        .arg("key:FirstReadJob#nothing-parked")
        .query(&mut redis())
        .unwrap();
    let due: Option<String> = redis().get(keys::RATE_DUE).unwrap();
    assert_eq!(due.as_deref(), Some("1"), "set to the first opening");
    assert_eq!(
        parked_jobs(&id).len(),
        1,
        "the other limit's sweep sent nothing"
    );
    let taken = fetch(&f, &uuid, &[(&q, &plain)], &[&q]);
    assert_eq!(
        taken.as_deref(),
        Some(parked.as_str()),
        "the next fetch sends it back"
    );
}

#[test]
fn rate_due_earlier_than_the_first_opening_is_set_right_by_the_fetch() {
    let _turn = turn();
    let f = function("fetch");
    let uuid = uuid::Uuid::new_v4().to_string();
    let (q, id, plain, _) = parked_behind_a_minute(&f, &uuid, "first-read-early");
    let opens: String = redis().get(keys::RATE_DUE).unwrap();
    // A call failed after it sent limits back, before rate_due followed.
    let _: () = redis().set(keys::RATE_DUE, 1).unwrap();
    assert_eq!(fetch(&f, &uuid, &[(&q, &plain)], &[&q]), None);
    let due: Option<String> = redis().get(keys::RATE_DUE).unwrap();
    assert_eq!(due, Some(opens), "back to the first opening");
    assert_eq!(parked_jobs(&id).len(), 1, "not due: still parked");
    let ran = commands(|| {
        fetch(&f, &uuid, &[], &[&q]);
    });
    assert_eq!(
        ran.get("zrange"),
        None,
        "no look at rate_parked again: {ran:?}"
    );
}

#[test]
fn an_acknowledgement_forgets_its_jobs_recovery_once_a_reap_counted_one() {
    let _turn = turn();
    let f = function("fetch");
    let uuid = uuid::Uuid::new_v4().to_string();
    let q = queue("first-read-recovered");
    let (recovered, next) = (job(&q, "recovered", None), job(&q, "next", None));
    let _: () = redis()
        .rpush(keys::queue(&q), &[&next, &recovered])
        .unwrap();
    assert_eq!(
        fetch(&f, &uuid, &[], &[&q]).as_deref(),
        Some(recovered.as_str())
    );
    // As a reap that recovered it counts it (lua/reap.lua).
    let _: () = redis().hset(keys::RECOVERIES, sha1(&recovered), 1).unwrap();
    let _: () = redis().hset(keys::RECOVERIES, "another-job", 1).unwrap();
    let _: () = redis().incr(keys::RECOVERED, 1).unwrap();
    let taken = fetch(&f, &uuid, &[(&q, &recovered)], &[&q]);
    assert_eq!(taken.as_deref(), Some(next.as_str()));
    let left: Vec<String> = redis().hkeys(keys::RECOVERIES).unwrap();
    assert_eq!(left, vec!["another-job".to_string()], "its count forgotten");
}

#[test]
fn the_first_queues_state_read_ahead_stands_for_it_alone() {
    let _turn = turn();
    let f = function("fetch");
    let uuid = uuid::Uuid::new_v4().to_string();
    let (first, handed) = (queue("first-read-open"), queue("first-read-paused"));
    let _: () = redis().set(keys::paused(&handed), "1").unwrap();
    // A hand-over moved a job of the paused queue, second in the fetch's
    // order, and leaves it to the script (its queue's state changed).
    let moved = job(&handed, "moved", None);
    let _: () = redis()
        .lpush(keys::in_progress(&uuid, &handed), &moved)
        .unwrap();
    let taken = match redis::cmd("FCALL")
        .arg(&f)
        .arg(0)
        .arg(&uuid)
        .arg("0")
        .arg("100")
        .arg(0)
        .arg(&[handed.as_str(), "0", moved.as_str(), "", "", "0"][..])
        .arg(&[first.as_str(), handed.as_str()][..])
        .query(&mut redis())
        .unwrap()
    {
        Value::Array(reply) => reply.get(1).cloned(),
        _ => None,
    };
    assert!(
        matches!(taken, None | Some(Value::Nil) | Some(Value::Boolean(false))),
        "nothing taken from a paused queue: {taken:?}"
    );
    let queued: Vec<String> = redis().lrange(keys::queue(&handed), 0, -1).unwrap();
    assert_eq!(queued, vec![moved], "back in its queue");
}
