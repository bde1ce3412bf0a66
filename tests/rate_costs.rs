//! What a rate's parking and release cost Redis, command by command (INFO
//! commandstats around one call of the prelude's functions, on this test
//! binary's own Redis, one test at a time): a window's release reads its
//! parked list's oldest job and its limit's values once, and pushes a
//! queue's jobs in one RPUSH; a freed slot of a limit without concurrency
//! reads its values alone; in the fetch, the count of jobs sent back is
//! written once as the call ends, less those it started (none for a job it
//! sends back and takes at once), and RATE_DUE_KEY and RATE_WAKE_KEY once.
//! What each leaves in Redis is checked with it.

mod support;

use std::collections::HashMap;
use std::sync::Mutex;

use redis::Commands;
use support::{command_calls, eval_after_prelude, redis};

/// commandstats are the server's: one measured call at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Takes the lock, and clears the keys every rate shares (the first
/// opening of parked limits, and when it is due).
fn alone() -> std::sync::MutexGuard<'static, ()> {
    let guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let _: () = redis()
        .del(&[
            "sidekiq:limit_fetch:rate_parked",
            "sidekiq:limit_fetch:rate_due",
            "sidekiq:limit_fetch:rate_wake",
        ])
        .unwrap();
    guard
}

/// A rate of 3 per second, declared by the parked jobs of job limit `id`.
fn job(id: &str, queue: &str, jid: usize) -> String {
    format!(
        r#"{{"limit_fetch":[{{"id":"{id}","rate":[3,1]}}],"queue":"{queue}","class":"RateJob","args":[],"jid":"j{jid}"}}"#
    )
}

/// A fresh job limit with `parked` jobs parked behind its rate (the oldest
/// first to go), noted among the limits with parked jobs; returns its id
/// and their queue.
fn parked(label: &str, parked: usize) -> (String, String) {
    let id = format!("RateJob-{label}-{}", uuid::Uuid::new_v4());
    let queue = format!("costs-{}", uuid::Uuid::new_v4());
    let mut conn = redis();
    for jid in 0..parked {
        let _: () = conn
            .lpush(
                format!("sidekiq:limit_fetch:limit:{id}:parked"),
                job(&id, &queue, jid),
            )
            .unwrap();
    }
    let _: () = conn.sadd("sidekiq:limit_fetch:parked", &id).unwrap();
    (id, queue)
}

/// The Lua commands `body` (after the prelude, KEYS[1] and ARGV[1] the job
/// limit's id and queue) sent, by name, with its reply.
fn costs(body: &str, id: &str, queue: &str) -> (HashMap<String, u64>, Vec<String>) {
    let mut conn = redis();
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query(&mut conn)
        .unwrap();
    let reply: Vec<String> = eval_after_prelude(body, &[id], &[queue]);
    let mut calls = command_calls(&mut conn);
    calls.remove("eval");
    (calls, reply)
}

fn calls(costs: &HashMap<String, u64>, command: &str) -> u64 {
    costs.get(command).copied().unwrap_or(0)
}

/// Each named command's calls, all at once (a failure shows them all).
fn assert_calls(costs: &HashMap<String, u64>, expected: &[(&str, u64)], case: &str) {
    let seen: Vec<(&str, u64)> = expected
        .iter()
        .map(|(c, _)| (*c, calls(costs, c)))
        .collect();
    assert_eq!(seen, expected, "{case}: every command {costs:?}");
}

#[test]
fn a_windows_release_reads_its_oldest_and_values_once_and_pushes_a_queues_jobs_at_once() {
    let _one = alone();
    let (id, queue) = parked("release", 5);
    let (costs, reply) = costs(
        "new_call()\nlocal _, sent = release(KEYS[1])\nreturn {tostring(sent)}",
        &id,
        &queue,
    );
    assert_eq!(reply, ["3"], "the window's room");
    assert_calls(
        &costs,
        &[
            ("lindex", 1),
            ("llen", 1),
            ("get", 1),
            ("mget", 1),
            ("rpop", 1),
            ("rpush", 1),
            ("incrby", 0),
            ("pexpire", 0),
        ],
        "release",
    );
    let mut conn = redis();
    let queued: Vec<String> = conn.lrange(format!("queue:{queue}"), 0, -1).unwrap();
    let jids: Vec<String> = queued.iter().map(|j| support::jid_of(j)).collect();
    assert_eq!(jids, ["j2", "j1", "j0"], "the oldest first to be fetched");
    let count: Option<u64> = conn
        .get(format!("sidekiq:limit_fetch:limit:{id}:released"))
        .unwrap();
    let ttl: i64 = conn
        .pttl(format!("sidekiq:limit_fetch:limit:{id}:released"))
        .unwrap();
    assert_eq!(count, Some(3), "counted until they start");
    assert!(ttl > 0 && ttl <= 1000, "for a period at most: {ttl} ms");
}

#[test]
fn a_freed_slot_of_a_limit_without_concurrency_reads_its_values_alone() {
    let _one = alone();
    let (id, queue) = parked("freed", 2);
    let (costs, reply) = costs(
        "new_call()\nlocal known = {id = KEYS[1], rate = {3, 1}}\n\
         return {tostring(#release(KEYS[1], 1, nil, nil, known))}",
        &id,
        &queue,
    );
    assert_eq!(reply, ["0"], "its jobs go as its window opens");
    assert_calls(
        &costs,
        &[("mget", 1), ("sismember", 0), ("llen", 0), ("get", 0)],
        "a freed slot",
    );
    let left: u64 = redis()
        .llen(format!("sidekiq:limit_fetch:limit:{id}:parked"))
        .unwrap();
    assert_eq!(left, 2, "still parked");
}

/// The fetch's way (defer_rate_due): a window lets one job go, which it
/// takes and starts in the same call.
#[test]
fn a_windows_job_taken_at_once_writes_no_count_and_the_due_time_once() {
    let _one = alone();
    let (id, queue) = parked("taken", 4);
    let mut conn = redis();
    let starts = format!("sidekiq:limit_fetch:limit:{id}:starts");
    // Two starts a moment ago: room for one.
    let now: (u64, u64) = redis::cmd("TIME").query(&mut conn).unwrap();
    let now = now.0 * 1_000_000 + now.1;
    let _: () = conn.zadd(&starts, "a:1", now - 2_000).unwrap();
    let _: () = conn.zadd(&starts, "a:2", now - 1_000).unwrap();
    let (costs, reply) = costs(
        "new_call()\ndefer_rate_due(true)\n\
         local _, sent = release(KEYS[1])\n\
         local at = book_start(KEYS[1], {3, 1000000}, 'who')\n\
         defer_rate_due(false)\n\
         return {tostring(sent), string.format('%.0f', at)}",
        &id,
        &queue,
    );
    assert_eq!(reply[0], "1", "the window's room");
    let opens: u64 = reply[1].parse().unwrap();
    assert_eq!(opens, now - 2_000 + 1_000_000, "as the oldest start leaves");
    assert_calls(
        &costs,
        &[
            ("decr", 0),
            ("del", 0),
            ("exists", 1),
            ("zcard", 1),
            ("zremrangebyscore", 1),
            ("set", 2),
            ("get", 1),
        ],
        "taken at once",
    );
    let count: Option<u64> = conn
        .get(format!("sidekiq:limit_fetch:limit:{id}:released"))
        .unwrap();
    assert_eq!(count, None, "started: none counted");
    let due: Option<u64> = conn.get("sidekiq:limit_fetch:rate_due").unwrap();
    let wake: Option<u64> = conn.get("sidekiq:limit_fetch:rate_wake").unwrap();
    let noted: Option<u64> = conn.zscore("sidekiq:limit_fetch:rate_parked", &id).unwrap();
    assert_eq!(noted, Some(opens), "parked until its window opens");
    assert_eq!(due, Some(opens), "rate_due");
    assert_eq!(wake, Some(opens), "rate_wake");
}

/// The fetch's way, jobs sent back and not all started in the call: the
/// rest are counted as it ends.
#[test]
fn jobs_sent_back_and_not_started_are_counted_as_the_fetch_ends() {
    let _one = alone();
    let (id, queue) = parked("counted", 2);
    let (costs, _) = costs(
        "new_call()\ndefer_rate_due(true)\n\
         release(KEYS[1])\n\
         book_start(KEYS[1], {3, 1000000}, 'who')\n\
         defer_rate_due(false)\n\
         return {}",
        &id,
        &queue,
    );
    assert_calls(&costs, &[("decr", 0), ("incrby", 0)], "counted");
    let mut conn = redis();
    let key = format!("sidekiq:limit_fetch:limit:{id}:released");
    let count: Option<u64> = conn.get(&key).unwrap();
    let ttl: i64 = conn.pttl(&key).unwrap();
    assert_eq!(count, Some(1), "two sent back, one started");
    assert!(ttl > 0 && ttl <= 1000, "for a period at most: {ttl} ms");
}

/// The fetch's way: a job of one tenant's rate acknowledged, another
/// tenant's taken: both limits' values in one read, the freed slot decided
/// as the call ends (nothing to send back without concurrency).
#[test]
fn a_freed_slot_in_the_fetch_is_read_with_the_next_limits_values() {
    let _one = alone();
    let (id, queue) = parked("acked", 1);
    let (costs, reply) = costs(
        "new_call()\ndefer_rate_due(true)\n\
         release(KEYS[1], 1, nil, nil, {id = KEYS[1], rate = {3, 1}})\n\
         local taken = job_limit({id = KEYS[1] .. '-next', rate = {3, 1}})\n\
         return {tostring(#defer_rate_due(false)), taken == MAX_LIMIT and 'none' or tostring(taken)}",
        &id,
        &queue,
    );
    assert_eq!(reply, ["0", "none"], "no queue written; no concurrency");
    assert_calls(
        &costs,
        &[("mget", 1), ("sismember", 0), ("llen", 0)],
        "acknowledged and taken",
    );
}

/// A rate limit that declares no concurrency but has one stored: its freed
/// slot, decided as the fetch ends, sends its parked job back then.
#[test]
fn a_freed_slot_of_a_stored_concurrency_sends_its_parked_job_back_as_the_fetch_ends() {
    let _one = alone();
    let (id, queue) = parked("stored", 1);
    let _: () = redis()
        .set(format!("sidekiq:limit_fetch:limit:{id}:limit"), 1)
        .unwrap();
    let (_, reply) = costs(
        "new_call()\ndefer_rate_due(true)\n\
         release(KEYS[1], 1, nil, nil, {id = KEYS[1], rate = {3, 1}})\n\
         return defer_rate_due(false)",
        &id,
        &queue,
    );
    assert_eq!(reply, [format!("queue:{queue}")], "its queue written");
    let mut conn = redis();
    let queued: Vec<String> = conn.lrange(format!("queue:{queue}"), 0, -1).unwrap();
    assert_eq!(queued.len(), 1, "sent back");
    let left: u64 = conn
        .llen(format!("sidekiq:limit_fetch:limit:{id}:parked"))
        .unwrap();
    assert_eq!(left, 0, "none left parked");
}
