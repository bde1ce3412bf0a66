//! A rate's window in data format 2 (lua/prelude/rate_shapes.lua), against
//! a real Redis, one test at a time (the format and INFO commandstats are
//! the server's):
//!
//! - What a start sends, command by command, through the fetch script, in
//!   each format: in format 2 a rate of 64 starts or fewer has its window
//!   read in its limit's MGET and written with one SET ... PX (a period and
//!   LEASE_SPAN_MAX past its latest stamp), two commands fewer than a
//!   sorted set's ZCARD, ZADD and PEXPIRE; a larger rate stays a set.
//! - A string that outlived a spell of format 1 (in which a process that
//!   speaks format 1 alone wrote the set) does not hide the set's starts
//!   after the switch back to format 2; nor does one written in the
//!   switch's own millisecond.
//! - `stamps_to_set`, the `format 1` command's conversion, and the control
//!   plane's window (`Limits::rate_windows`), which reads both shapes.

mod support;

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use limit_fetch_core::{keys, Interrupt, Limits, Rate, RateOf};
use redis::{Commands, Value};
use support::{capsule, command_calls, eval_after_prelude, function_name, queue, redis, settings};

/// The data format and commandstats are the server's: one test at a time.
static TURN: Mutex<()> = Mutex::new(());

/// Takes the turn, in data format `format` ("2:1": format 2 since long
/// ago, its switch's moves over; None: no key, format 1).
fn turn(format: Option<&str>) -> MutexGuard<'static, ()> {
    let guard = TURN.lock().unwrap_or_else(|e| e.into_inner());
    in_format(format);
    guard
}

fn in_format(format: Option<&str>) {
    let mut conn = redis();
    let _: () = match format {
        Some(value) => conn.set(keys::FORMAT, value).unwrap(),
        None => conn.del(keys::FORMAT).unwrap(),
    };
}

/// The name Redis knows the gem's function `script` by, once a capsule
/// loaded the library.
fn function(script: &str) -> String {
    let c = capsule();
    let q = queue("rate-format-load");
    let _ = c.fetch(&[q.as_str()], &Interrupt::new());
    let _ = c.deregister(&[q.as_str()], &Interrupt::new());
    function_name(script)
}

/// A job of `q` under job limit `id`'s rate of `limit` a second, as the
/// client middleware writes it (no concurrency: a tenant's rate).
fn job(q: &str, jid: &str, id: &str, limit: u64) -> String {
    format!(
        r#"{{"limit_fetch":[{{"id":"{id}","rate":[{limit},1]}}],"queue":"{q}","class":"RateFormatJob","args":[],"jid":"{jid}"}}"#
    )
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
    let mut calls = command_calls(&mut conn);
    // The test's own: its connections' and the call's.
    calls.retain(|name, _| {
        !["fcall", "client|setinfo", "config|resetstat"].contains(&name.as_str())
    });
    calls
}

fn count(ran: &HashMap<String, u64>, name: &str) -> u64 {
    ran.get(name).copied().unwrap_or(0)
}

/// A tenant's three jobs under a rate of `limit` a second, fetched one
/// after another by one capsule, each fetch acknowledging the last job: the
/// commands of the first fetch (a cold window) and of the third (a window
/// with starts, the job before acknowledged), the limit's id, and the
/// commands in all.
fn three_starts(limit: u64) -> (HashMap<String, u64>, HashMap<String, u64>, String) {
    let f = function("fetch");
    let uuid = uuid::Uuid::new_v4().to_string();
    let q = queue("rate-format");
    let id = format!("key:RateFormatJob#{}", uuid::Uuid::new_v4());
    let jobs: Vec<String> = (0..3)
        .map(|i| job(&q, &format!("j{i}"), &id, limit))
        .collect();
    let _: () = redis()
        .rpush(keys::queue(&q), &[&jobs[2], &jobs[1], &jobs[0]])
        .unwrap();
    let mut taken = None;
    let cold = commands(|| taken = fetch(&f, &uuid, &[], &[&q]));
    assert_eq!(taken.as_deref(), Some(jobs[0].as_str()));
    let second = fetch(&f, &uuid, &[(&q, &jobs[0])], &[&q]);
    assert_eq!(second.as_deref(), Some(jobs[1].as_str()));
    let warm = commands(|| taken = fetch(&f, &uuid, &[(&q, &jobs[1])], &[&q]));
    assert_eq!(taken.as_deref(), Some(jobs[2].as_str()));
    (cold, warm, id)
}

fn total(ran: &HashMap<String, u64>) -> u64 {
    ran.values().sum()
}

#[test]
fn a_start_of_a_rate_of_64_or_fewer_sends_two_commands_fewer_in_format_2() {
    let (cold_1, warm_1, id_1) = {
        let _turn = turn(None);
        three_starts(50)
    };
    let (cold_2, warm_2, id_2) = {
        let _turn = turn(Some("2:1"));
        let measured = three_starts(50);
        in_format(None);
        measured
    };
    println!("format 1: cold {cold_1:?}\n          warm {warm_1:?}");
    println!("format 2: cold {cold_2:?}\n          warm {warm_2:?}");
    for (name, ran) in [("cold", &cold_1), ("warm", &warm_1)] {
        assert_eq!(count(ran, "zcard"), 1, "format 1, {name}: {ran:?}");
        assert_eq!(count(ran, "zadd"), 1, "format 1, {name}: {ran:?}");
        assert_eq!(count(ran, "pexpire"), 1, "format 1, {name}: {ran:?}");
    }
    for (name, ran) in [("cold", &cold_2), ("warm", &warm_2)] {
        for command in ["zcard", "zadd", "pexpire", "zrange", "get"] {
            assert_eq!(
                count(ran, command),
                0,
                "format 2, {name}, {command}: {ran:?}"
            );
        }
    }
    assert_eq!(
        count(&cold_2, "set"),
        count(&cold_1, "set") + 1,
        "one SET writes the window"
    );
    assert_eq!(
        total(&cold_2) + 2,
        total(&cold_1),
        "cold: {cold_1:?} against {cold_2:?}"
    );
    assert_eq!(
        total(&warm_2) + 2,
        total(&warm_1),
        "warm: {warm_1:?} against {warm_2:?}"
    );
    let mut conn = redis();
    let set: u64 = conn.zcard(keys::job_starts(&id_1)).unwrap();
    let string: Option<Vec<u8>> = conn.get(keys::job_stamps(&id_1)).unwrap();
    assert_eq!((set, string), (3, None), "format 1: the set");
    let set: u64 = conn.zcard(keys::job_starts(&id_2)).unwrap();
    let string: Vec<u8> = conn.get(keys::job_stamps(&id_2)).unwrap();
    assert_eq!(set, 0, "format 2: no set");
    assert_eq!(
        (string[0], string.len()),
        (b's', 1 + 16 + 3 * 8),
        "its three stamps"
    );
    let ttl: i64 = conn.pttl(keys::job_stamps(&id_2)).unwrap();
    assert!(
        ttl > 1_000 && ttl <= 1_050,
        "a period and LEASE_SPAN_MAX: {ttl} ms"
    );
}

#[test]
fn a_rate_of_more_than_64_stays_a_sorted_set_in_format_2() {
    let _turn = turn(Some("2:1"));
    let (_, warm, id) = three_starts(65);
    in_format(None);
    assert_eq!(
        (count(&warm, "zcard"), count(&warm, "zadd")),
        (1, 1),
        "{warm:?}"
    );
    let mut conn = redis();
    let set: u64 = conn.zcard(keys::job_starts(&id)).unwrap();
    let string: Vec<u8> = conn.get(keys::job_stamps(&id)).unwrap();
    assert_eq!(set, 3, "the set");
    assert_eq!((string[0], string.len()), (b'z', 9), "its mark");
}

/// Steps of a window under a rate of `limit` per second at times of the
/// test's choosing (µs), each "1" or "2" (a switch to that format, since
/// its millisecond), "old" (a start a process of format 1 alone records: a
/// member in the set, nothing else looked at) or "new" (this version's
/// count, and a start if it has room); the room of each "new".
fn steps(limit: u64, steps: &[(u64, &str)]) -> Vec<i64> {
    const STEPS: &str = r"
local starts, rate = KEYS[1], {tonumber(ARGV[1]), 1000000}
local out = {}
for i = 2, #ARGV, 2 do
  local t, step = tonumber(ARGV[i]), ARGV[i + 1]
  if step == 'old' then
    redis.call('ZADD', starts, t, 'old:' .. t)
  elseif step == 'new' then
    new_call()
    clock = t
    local room = rate_room(starts, rate)
    if room > 0 then record_start(starts, rate, 'who') end
    out[#out + 1] = room
  else
    redis.call('SET', FORMAT_KEY, step .. ':' .. string.format('%.0f', math.floor(t / 1000)))
  end
end
return out
";
    let key = keys::job_starts(&format!("steps-{}", uuid::Uuid::new_v4()));
    let mut args = vec![limit.to_string()];
    for (t, step) in steps {
        args.push(t.to_string());
        args.push((*step).to_owned());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    eval_after_prelude(STEPS, &[&key], &args)
}

#[test]
fn a_string_that_outlived_format_1_does_not_hide_the_starts_written_in_its_set() {
    let _turn = turn(None);
    const E: u64 = 1_764_000_000_000_000;
    // Its stamps stopped counting, the key lives on: after the switch back
    // to format 2, the set's start still counts.
    let outlived = steps(
        1,
        &[
            (E, "2"),
            (E + 1_000, "new"),
            (E + 2_000_000, "1"),
            (E + 2_010_000, "old"),
            (E + 2_020_000, "2"),
            (E + 2_021_000, "new"),
        ],
    );
    // Written in the very millisecond the switches name.
    let same_millisecond = steps(
        2,
        &[
            (E, "2"),
            (E + 100, "new"),
            (E + 200, "1"),
            (E + 300, "old"),
            (E + 400, "2"),
            (E + 500, "new"),
        ],
    );
    in_format(None);
    assert_eq!(outlived, [1, 0], "the old process's start counts");
    assert_eq!(same_millisecond, [2, 0], "both starts count");
}

#[test]
fn stamps_to_set_moves_a_strings_starts_into_the_set_and_the_control_plane_reads_both_shapes() {
    let _turn = turn(Some("2:1"));
    let (_, _, id) = three_starts(50);
    in_format(None);
    let admin = Limits::new(&settings());
    let rate = Rate {
        limit: 50,
        period: Duration::from_secs(1),
    };
    let window = |admin: &Limits| {
        admin
            .rate_windows(&[(RateOf::Job, id.clone(), rate)], &Interrupt::new())
            .unwrap()[0]
    };
    assert_eq!(window(&admin).starts, 3, "the string's starts");
    let string: Vec<u8> = redis().get(keys::job_stamps(&id)).unwrap();
    let moved: i64 = eval_after_prelude(
        "new_call()\nreturn stamps_to_set(KEYS[1])",
        &[&keys::job_stamps(&id)],
        &[],
    );
    assert_eq!(moved, 3, "every start that counts");
    let mut conn = redis();
    let scores: Vec<(String, f64)> = conn
        .zrange_withscores(keys::job_starts(&id), 0, -1)
        .unwrap();
    let stamps: Vec<u64> = string[17..]
        .chunks_exact(8)
        .map(|b| f64::from_le_bytes(b.try_into().unwrap()) as u64)
        .collect();
    assert_eq!(
        scores.iter().map(|(_, s)| *s as u64).collect::<Vec<_>>(),
        stamps,
        "the same stamps, as scores"
    );
    let gone: bool = conn.exists(keys::job_stamps(&id)).unwrap();
    let ttl: i64 = conn.pttl(keys::job_starts(&id)).unwrap();
    assert!(!gone, "the string goes");
    assert!(
        ttl > 0 && ttl <= 1_050,
        "the set expires as the string did: {ttl} ms"
    );
    assert_eq!(window(&admin).starts, 3, "the set's starts");
}

/// A lease of starts (lua/lease.lua) for job limit `id` under a rate of
/// `limit` a second: {granted, span, stamp, hold}.
fn lease(f: &str, id: &str, limit: u64) -> (i64, i64, String, i64) {
    redis::cmd("FCALL")
        .arg(f)
        .arg(0)
        .arg(id)
        .arg(limit)
        .arg(1)
        .arg(1)
        .arg("who.thread")
        .query(&mut redis())
        .unwrap()
}

#[test]
fn a_rate_of_64_or_fewer_is_never_leased_in_format_2() {
    let _turn = turn(Some("2:1"));
    let f = function("lease");
    let id = format!("key:RateFormatJob#{}", uuid::Uuid::new_v4());
    let (granted, _, _, hold) = lease(&f, &id, 64);
    in_format(None);
    assert_eq!(
        (granted, hold),
        (0, 1_000_000),
        "none, and the script's for a period"
    );
    let exists: u64 = redis()
        .exists(&[keys::job_starts(&id), keys::job_stamps(&id)])
        .unwrap();
    assert_eq!(exists, 0, "its window untouched");
    let (granted, _, _, _) = lease(&f, &id, 64);
    assert_eq!(granted, 1, "format 1: one start, in the sorted set");
}

/// A plain job of queue `q`, no job limit.
fn plain_job(q: &str, jid: &str) -> String {
    format!(r#"{{"queue":"{q}","class":"RateFormatJob","args":[],"jid":"{jid}"}}"#)
}

#[test]
fn format_1_converts_every_string_window_back_before_an_older_process_counts() {
    let _turn = turn(Some("2:1"));
    let f = function("fetch");
    let (_, _, id) = three_starts(50);
    // A queue's rate of 3 a minute, two starts of it in format 2.
    let q = queue("rate-format-queue");
    let uuid = uuid::Uuid::new_v4().to_string();
    let mut conn = redis();
    let _: () = conn.set(keys::rate(&q), "3/60").unwrap();
    let jobs: Vec<String> = (0..3).map(|i| plain_job(&q, &format!("q{i}"))).collect();
    let _: () = conn.rpush(keys::queue(&q), &jobs).unwrap();
    assert!(fetch(&f, &uuid, &[], &[&q]).is_some());
    assert!(fetch(&f, &uuid, &[(&q, &jobs[0])], &[&q]).is_some());
    for key in [keys::job_stamps(&id), keys::stamps(&q)] {
        let string: bool = conn.exists(&key).unwrap();
        assert!(string, "format 2 kept {key} as a string");
    }

    let change = Limits::new(&settings())
        .pin_format_1(&Interrupt::new())
        .unwrap();
    assert!(
        change.converted >= 2,
        "both strings converted: {}",
        change.converted
    );
    for (stamps, starts, n) in [
        (keys::job_stamps(&id), keys::job_starts(&id), 3),
        (keys::stamps(&q), keys::starts(&q), 2),
    ] {
        let string: bool = conn.exists(&stamps).unwrap();
        let counted: u64 = conn.zcard(&starts).unwrap();
        assert!(!string, "{stamps} converted");
        assert_eq!(counted, n, "{starts} holds every start that counts");
    }
    // What an older process counts: the set. The queue's third job finds
    // the window full (two starts moved, one more fits: 3 a minute).
    assert!(fetch(&f, &uuid, &[(&q, &jobs[1])], &[&q]).is_some());
    let _: () = conn.rpush(keys::queue(&q), plain_job(&q, "q3")).unwrap();
    assert_eq!(fetch(&f, &uuid, &[], &[&q]), None, "3 a minute, 3 started");
    let _: () = conn.del(keys::FORMAT).unwrap();
}
