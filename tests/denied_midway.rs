//! A script stopped partway loses nothing, against a real Redis: Redis keeps
//! what a function wrote before a command the user's ACL refuses (changed
//! under running processes, after the capsule's boot check passed). For each
//! script path that moves jobs between lists, and for each write command it
//! sends, the command is denied to the user that runs the path; the path
//! must fail, and every job it touched must then be exactly once where a
//! process will find it: its queue, a parked list whose limit is in the
//! parked set, an in-progress list (of a capsule still registered, for the
//! reaper's path), or the dead set.
//!
//! Each path is driven as the core drives it: `FCALL` of the gem's function,
//! with the arguments its caller sends, on Redis state built for it, under a
//! user with `+@all ~* &*` minus the one command.

mod support;

use std::sync::{Mutex, MutexGuard};

use limit_fetch_core::{keys, Interrupt};
use redis::{Commands, Value};
use support::{capsule, function_name, jid_of, queue, redis, settings};

/// The paths share Redis's global sets (parked, rate-parked): one at a time.
static TURN: Mutex<()> = Mutex::new(());

fn turn() -> MutexGuard<'static, ()> {
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

const USER: &str = "partway";
const PASSWORD: &str = "partway-pw";

/// A job of `queue`, as the client middleware writes it: its job limit
/// (`rule`, JSON members after the id) first, its queue next.
fn job(queue: &str, jid: &str, limit: Option<(&str, &str)>) -> String {
    let tail = format!(r#""queue":"{queue}","class":"PartwayJob","args":[],"jid":"{jid}"}}"#);
    match limit {
        None => format!("{{{tail}"),
        Some((id, rule)) => format!(r#"{{"limit_fetch":[{{"id":"{id}",{rule}}}],{tail}"#),
    }
}

fn id(label: &str) -> String {
    format!("key:PartwayJob#{label}-{}", uuid::Uuid::new_v4())
}

/// A path's Redis state, built, and how to drive it.
struct Scene {
    /// The gem's script (src/script/mod.rs's names).
    script: &'static str,
    keys: Vec<String>,
    args: Vec<String>,
    /// The jids it must keep, each exactly once.
    jids: Vec<String>,
    queue: String,
    /// The job limits whose parked lists hold jobs, before or after.
    limits: Vec<String>,
    uuid: String,
}

/// Loads the gem's library as a capsule does at boot, then leaves no live
/// capsule behind (its beats would reconcile and sweep under the paths).
fn load_library() {
    let c = capsule();
    let q = queue("partway-load");
    let _ = c.fetch(&[q.as_str()], &Interrupt::new());
    let _ = c.deregister(&[q.as_str()], &Interrupt::new());
}

fn as_user() -> redis::Connection {
    let port = settings().port;
    redis::Client::open(format!("redis://{USER}:{PASSWORD}@127.0.0.1:{port}/"))
        .unwrap()
        .get_connection()
        .unwrap()
}

fn acl(rules: &[&str]) {
    let _: () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg(USER)
        .arg(rules)
        .query(&mut redis())
        .unwrap();
}

/// Where each jid is, as "key" entries (one per copy).
fn places(scene: &Scene) -> Vec<(String, Vec<String>)> {
    let mut conn = redis();
    let mut lists = vec![
        keys::queue(&scene.queue),
        keys::in_progress(&scene.uuid, &scene.queue),
    ];
    lists.extend(scene.limits.iter().map(|id| keys::parked(id)));
    let dead: Vec<String> = conn.zrange(keys::DEAD, 0, -1).unwrap();
    let registered: bool = conn.sismember(keys::CAPSULES, &scene.uuid).unwrap_or(false)
        || conn
            .sismember(keys::REGISTERED, &scene.uuid)
            .unwrap_or(false);
    let parked_set: Vec<String> = conn.smembers(keys::LIMITS_WITH_PARKED).unwrap();
    scene
        .jids
        .iter()
        .map(|jid| {
            let mut at = Vec::new();
            for list in &lists {
                let jobs: Vec<String> = conn.lrange(list, 0, -1).unwrap();
                for _ in jobs.iter().filter(|j| jid_of(j) == *jid) {
                    let mut place = list.clone();
                    if scene.limits.iter().any(|id| *list == keys::parked(id))
                        && !parked_set.iter().any(|id| *list == keys::parked(id))
                    {
                        place.push_str(" (its limit not in the parked set: never released)");
                    }
                    if *list == keys::in_progress(&scene.uuid, &scene.queue)
                        && scene.script == "reap"
                        && !registered
                    {
                        place.push_str(" (its capsule unregistered: never reaped)");
                    }
                    at.push(place);
                }
            }
            for _ in dead.iter().filter(|j| jid_of(j) == *jid) {
                at.push(keys::DEAD.to_string());
            }
            (jid.clone(), at)
        })
        .collect()
}

/// Denies each of `commands` in turn to the user running the path that
/// `build` sets up afresh, drives it, and returns one line per row:
/// "ok" or what went wrong.
fn rows(path: &str, commands: &[&str], build: impl Fn() -> Scene) -> Vec<String> {
    let _turn = turn();
    load_library();
    acl(&["reset", "on", &format!(">{PASSWORD}"), "~*", "&*", "+@all"]);
    let mut table = Vec::new();
    for command in commands {
        let scene = build();
        acl(&[&format!("-{command}")]);
        let reply: redis::RedisResult<Value> = redis::cmd("FCALL")
            .arg(function_name(scene.script))
            .arg(scene.keys.len())
            .arg(&scene.keys)
            .arg(&scene.args)
            .query(&mut as_user());
        acl(&[&format!("+{command}")]);
        let mut problems = Vec::new();
        match &reply {
            // Refused inside a script, or (a path that checks first) as NOPERM.
            Err(e)
                if e.to_string()
                    .contains(&format!("no permissions to run the '{command}'")) => {}
            Err(e) => problems.push(format!("failed otherwise: {e}")),
            Ok(_) => problems.push("the path did not send it (it succeeded)".to_string()),
        }
        for (jid, at) in places(&scene) {
            let fine = at.len() == 1 && !at[0].contains('(');
            if !fine {
                let at = if at.is_empty() {
                    "nowhere: lost".to_string()
                } else {
                    at.join(", ")
                };
                problems.push(format!("{jid} at {at}"));
            }
        }
        let line = if problems.is_empty() {
            format!("{path} × {command}: ok")
        } else {
            format!("{path} × {command}: {}", problems.join("; "))
        };
        eprintln!("{line}");
        table.push(line);
        cleanup(&scene);
    }
    table
}

fn cleanup(scene: &Scene) {
    let mut conn = redis();
    for id in &scene.limits {
        let _: () = conn.srem(keys::LIMITS_WITH_PARKED, id).unwrap();
        let _: () = conn.zrem(keys::RATE_PARKED, id).unwrap();
    }
    let _: () = conn.srem(keys::CAPSULES, &scene.uuid).unwrap();
}

fn assert_all_ok(table: &[String]) {
    let broken: Vec<&String> = table.iter().filter(|l| !l.ends_with(": ok")).collect();
    assert!(broken.is_empty(), "broken rows:\n{broken:#?}");
}

fn lpush(key: &str, values: &[String]) {
    for v in values {
        let _: () = redis().lpush(key, v).unwrap();
    }
}

/// The fetch's arguments (src/lua/fetch/state.lua): no hand-over, `acks`
/// triples, then the queues.
fn fetch_args(uuid: &str, acks: &[(&str, &str)], queues: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = vec![uuid.into(), "0".into(), "100".into()];
    args.push(acks.len().to_string());
    args.extend(["", "0", "", "", "", "0"].map(String::from));
    for (q, j) in acks {
        args.extend([q.to_string(), j.to_string(), "0".repeat(40)]);
    }
    args.extend(queues.iter().map(|q| q.to_string()));
    args
}

fn scene(script: &'static str, q: &str, uuid: &str, args: Vec<String>) -> Scene {
    Scene {
        script,
        keys: Vec::new(),
        args,
        jids: Vec::new(),
        queue: q.to_string(),
        limits: Vec::new(),
        uuid: uuid.to_string(),
    }
}

fn fresh_uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// A key at its limit of 1 (another capsule holds its slot), with `n` of
/// its jobs at the front of a fresh queue and a plain job behind them.
fn keyed_backlog(label: &str, n: usize, rule: &str) -> Scene {
    let (q, k, uuid) = (queue(label), id(label), fresh_uuid());
    let _: () = redis()
        .rpush(keys::job_busy(&k), "another-capsule")
        .unwrap();
    let mut jobs: Vec<String> = (1..=n)
        .map(|i| job(&q, &format!("{label}{i}"), Some((&k, rule))))
        .collect();
    jobs.push(job(&q, &format!("{label}-plain"), None));
    lpush(&keys::queue(&q), &jobs);
    let mut s = scene("fetch", &q, &uuid, fetch_args(&uuid, &[], &[&q]));
    s.jids = jobs.iter().map(|j| jid_of(j)).collect();
    s.limits = vec![k];
    s
}

#[test]
fn fetch_parking_one_job() {
    let table = rows("fetch: set_aside", &["lmove", "sadd", "rpush"], || {
        keyed_backlog("aside", 1, r#""concurrency":1"#)
    });
    assert_all_ok(&table);
}

#[test]
fn fetch_parking_a_hot_keys_front() {
    let table = rows(
        "fetch: park_front",
        &["lmove", "sadd", "ltrim", "lpush", "rpush"],
        || keyed_backlog("front", 6, r#""concurrency":1"#),
    );
    assert_all_ok(&table);
}

#[test]
fn fetch_discarding() {
    let table = rows(
        "fetch: discard",
        &["lmove", "hincrby", "rpush", "sadd", "lrem"],
        || keyed_backlog("discard", 1, r#""concurrency":1,"discard":true"#),
    );
    assert_all_ok(&table);
}

/// A capsule runs a job of a key (limit 1) whose next job is parked; the
/// job's acknowledgement rides on a fetch of `fetched` (its own queue, or
/// another), which sends the parked job back.
fn acknowledged(label: &str, own_queue: bool) -> Scene {
    let (q, k, uuid) = (queue(label), id(label), fresh_uuid());
    let other = queue(label);
    let running = job(
        &q,
        &format!("{label}-running"),
        Some((&k, r#""concurrency":1"#)),
    );
    let parked = job(
        &q,
        &format!("{label}-parked"),
        Some((&k, r#""concurrency":1"#)),
    );
    let mut conn = redis();
    let _: () = conn.lpush(keys::in_progress(&uuid, &q), &running).unwrap();
    let _: () = conn.rpush(keys::busy(&q), &uuid).unwrap();
    let _: () = conn.sadd(keys::capsule_queues(&uuid), &q).unwrap();
    let _: () = conn.rpush(keys::job_busy(&k), &uuid).unwrap();
    let _: () = conn.lpush(keys::parked(&k), &parked).unwrap();
    let _: () = conn.sadd(keys::LIMITS_WITH_PARKED, &k).unwrap();
    let fetched = if own_queue {
        q.as_str()
    } else {
        other.as_str()
    };
    let mut s = scene(
        "fetch",
        &q,
        &uuid,
        fetch_args(&uuid, &[(&q, &running)], &[fetched]),
    );
    s.jids = vec![jid_of(&parked)];
    s.limits = vec![k];
    s
}

#[test]
fn acknowledgement_releasing_a_parked_job_it_takes() {
    let table = rows("ack release, taken", &["lrem", "rpop", "srem"], || {
        acknowledged("acktaken", true)
    });
    assert_all_ok(&table);
}

#[test]
fn acknowledgement_releasing_a_parked_job_it_pushes() {
    let table = rows("ack release, pushed", &["lrem", "rpop", "srem"], || {
        acknowledged("ackpushed", false)
    });
    assert_all_ok(&table);
}

/// The job a release hands to the fetch (the acknowledgement's freed slot
/// passes to it, its queue's key unwritten) is in the call's memory from
/// the parked list's RPOP to the LPUSH that takes it or the RPUSH that
/// sends it to its queue: a check of those before every such release would
/// cost a hot key's every fetch.
#[test]
#[ignore = "known gap: a job released at an acknowledgement is lost if its LPUSH or RPUSH is refused"]
fn acknowledgement_releasing_a_parked_job_then_refused_its_push() {
    let mut table = rows("ack release, taken", &["lpush"], || {
        acknowledged("acktaken", true)
    });
    table.extend(rows("ack release, pushed", &["rpush"], || {
        acknowledged("ackpushed", false)
    }));
    assert_all_ok(&table);
}

/// A job a hand-over moved unchecked into the capsule's in-progress list
/// (src/capsule/hand_over/), at its key's full limit: the fetch takes it
/// out of the list (LREM), then parks it (LPUSH, SADD).
#[test]
#[ignore = "known gap: a job a hand-over passed is lost or stranded if its parking's LPUSH or SADD is refused"]
fn a_hand_overs_job_parked_by_the_fetch() {
    let table = rows("fetch: adopt", &["lpush", "sadd"], || {
        let (q, k, uuid) = (queue("adopt"), id("adopt"), fresh_uuid());
        let moved = job(&q, "adopt-moved", Some((&k, r#""concurrency":1"#)));
        let mut conn = redis();
        let _: () = conn.rpush(keys::job_busy(&k), "another-capsule").unwrap();
        let _: () = conn.lpush(keys::in_progress(&uuid, &q), &moved).unwrap();
        let mut args = fetch_args(&uuid, &[], &[&q]);
        args[4] = q.clone();
        args[6] = moved.clone();
        let mut s = scene("fetch", &q, &uuid, args);
        s.jids = vec![jid_of(&moved)];
        s.limits = vec![k];
        s
    });
    assert_all_ok(&table);
}

/// `n` jobs of a queue parked behind a rate of `per_window` starts a
/// minute, whose window has opened; the fetch asks for that queue, after
/// `ahead` (a queue holding a plain job, which it then takes) if given.
fn rate_opened(label: &str, n: usize, per_window: usize, ahead: Option<&str>) -> Scene {
    let (q, k, uuid) = (queue(label), id(label), fresh_uuid());
    let rule = format!(r#""rate":[{per_window},60]"#);
    let parked: Vec<String> = (1..=n)
        .map(|i| job(&q, &format!("{label}-parked{i}"), Some((&k, &rule))))
        .collect();
    let mut conn = redis();
    lpush(&keys::parked(&k), &parked);
    let _: () = conn.sadd(keys::LIMITS_WITH_PARKED, &k).unwrap();
    // Both keys, as rate_parks writes them: a fetch reads rate_parked only
    // when rate_due says a window is due.
    let _: () = conn.zadd(keys::RATE_PARKED, &k, 1).unwrap();
    let _: () = conn.set(keys::RATE_DUE, 1).unwrap();
    let mut queues = vec![q.as_str()];
    if let Some(other) = ahead {
        let _: () = conn
            .lpush(
                keys::queue(other),
                job(other, &format!("{label}-ahead"), None),
            )
            .unwrap();
        queues.insert(0, other);
    }
    let mut s = scene("fetch", &q, &uuid, fetch_args(&uuid, &[], &queues));
    s.jids = parked.iter().map(|j| jid_of(j)).collect();
    s.limits = vec![k];
    s
}

/// The job a window lets go moves from its parked list into the capsule's
/// in-progress list in one command, its first write: taken there, or (not
/// taken) moved on to the front of its queue in one command as the call
/// ends; more than one sent back go to their queue (checked first).
#[test]
fn a_rates_timed_release() {
    let writes = [
        "zrem",
        "zremrangebyscore",
        "srem",
        "pexpire",
        "rpush",
        "del",
        "lmove",
        "zadd",
        "sadd",
    ];
    let mut table = rows("fetch: release_opened, taken", &writes, || {
        rate_opened("rate", 1, 1, None)
    });
    let mut more = writes.to_vec();
    // One sent back and not started: counted as the call ends.
    more.extend(["rpop", "set"]);
    table.extend(rows("fetch: release_opened, two", &more, || {
        rate_opened("rate2", 2, 2, None)
    }));
    let ahead = queue("rate-ahead");
    table.extend(rows(
        "fetch: release_opened, not taken",
        &[
            "zrem",
            "zremrangebyscore",
            "srem",
            "set",
            "lmove",
            "sadd",
            "rpush",
            "lrem",
        ],
        || rate_opened("rate-back", 1, 1, Some(&ahead)),
    ));
    assert_all_ok(&table);
}

#[test]
fn requeue() {
    let table = rows("requeue", &["rpush", "lrem", "rpop", "srem"], || {
        let (q, k, uuid) = (queue("requeue"), id("requeue"), fresh_uuid());
        let held = job(&q, "requeue-held", Some((&k, r#""concurrency":1"#)));
        let parked = job(&q, "requeue-parked", Some((&k, r#""concurrency":1"#)));
        let mut conn = redis();
        let _: () = conn.lpush(keys::in_progress(&uuid, &q), &held).unwrap();
        let _: () = conn.rpush(keys::busy(&q), &uuid).unwrap();
        let _: () = conn.rpush(keys::job_busy(&k), &uuid).unwrap();
        let _: () = conn.lpush(keys::parked(&k), &parked).unwrap();
        let _: () = conn.sadd(keys::LIMITS_WITH_PARKED, &k).unwrap();
        let mut s = scene(
            "requeue",
            &q,
            &uuid,
            vec![uuid.clone(), q.clone(), held.clone()],
        );
        s.jids = vec![jid_of(&held), jid_of(&parked)];
        s.limits = vec![k];
        s
    });
    assert_all_ok(&table);
}

#[test]
fn reap() {
    let table = rows(
        "reap",
        &[
            "del", "srem", "lrem", "rpop", "rpush", "lmove", "hincrby", "expire", "incrby",
        ],
        || {
            let (q, k, uuid) = (queue("reap"), id("reap"), fresh_uuid());
            let keyed = job(&q, "reap-keyed", Some((&k, r#""concurrency":1"#)));
            let plain = job(&q, "reap-plain", None);
            let parked = job(&q, "reap-parked", Some((&k, r#""concurrency":1"#)));
            let mut conn = redis();
            let _: () = conn.sadd(keys::CAPSULES, &uuid).unwrap();
            let _: () = conn.sadd(keys::capsule_queues(&uuid), &q).unwrap();
            let _: () = conn.rpush(keys::busy(&q), &[&uuid, &uuid]).unwrap();
            lpush(
                &keys::in_progress(&uuid, &q),
                &[keyed.clone(), plain.clone()],
            );
            let _: () = conn.rpush(keys::job_busy(&k), &uuid).unwrap();
            let _: () = conn.lpush(keys::parked(&k), &parked).unwrap();
            let _: () = conn.sadd(keys::LIMITS_WITH_PARKED, &k).unwrap();
            let mut s = scene(
                "reap",
                &q,
                &uuid,
                vec![uuid.clone(), "0".into(), "5".into(), "1700000000".into()],
            );
            s.keys = vec![
                keys::CAPSULES.to_string(),
                keys::heartbeat(&uuid),
                keys::busy(&q),
            ];
            s.jids = [&keyed, &plain, &parked].map(|j| jid_of(j)).to_vec();
            s.limits = vec![k];
            s
        },
    );
    assert_all_ok(&table);
}

#[test]
fn reconcile() {
    let table = rows("reconcile", &["lrem", "rpush", "lpush", "sadd"], || {
        // The capsule holds `held` (Redis lost its fetch: it is in its queue)
        // and not `stray` (its fetch's reply was lost: in its in-progress list).
        let (q, uuid) = (queue("reconcile"), fresh_uuid());
        let stray = job(&q, "reconcile-stray", None);
        let held = job(&q, "reconcile-held", None);
        let mut conn = redis();
        let _: () = conn.sadd(keys::capsule_queues(&uuid), &q).unwrap();
        let _: () = conn.lpush(keys::in_progress(&uuid, &q), &stray).unwrap();
        let _: () = conn.lpush(keys::queue(&q), &held).unwrap();
        let args = vec![
            uuid.clone(),
            "1".into(),
            q.clone(),
            "1".into(),
            held.clone(),
            "0".into(),
        ];
        let mut s = scene("reconcile", &q, &uuid, args);
        s.jids = vec![jid_of(&stray), jid_of(&held)];
        s
    });
    assert_all_ok(&table);
}

#[test]
fn reconcile_booking_again_a_job_redis_lost_the_fetch_of() {
    let table = rows(
        "reconcile, rebook",
        &["lpush", "lrem", "sadd", "rpush"],
        || {
            // The capsule holds `held`, found at the front of its queue.
            let (q, uuid) = (queue("rebook"), fresh_uuid());
            let held = job(&q, "rebook-held", None);
            let _: () = redis().lpush(keys::queue(&q), &held).unwrap();
            let args = vec![
                uuid.clone(),
                "1".into(),
                q.clone(),
                "1".into(),
                held.clone(),
                "0".into(),
            ];
            let mut s = scene("reconcile", &q, &uuid, args);
            s.jids = vec![jid_of(&held)];
            s
        },
    );
    assert_all_ok(&table);
}

#[test]
fn unpark_for_release_all() {
    let table = rows("unpark", &["lmove", "srem", "zrem", "del"], || {
        let (q, k, uuid) = (queue("unpark"), id("unpark"), fresh_uuid());
        let jobs: Vec<String> = (1..=3)
            .map(|i| job(&q, &format!("unpark{i}"), Some((&k, r#""concurrency":1"#))))
            .collect();
        lpush(&keys::parked(&k), &jobs);
        let _: () = redis().sadd(keys::LIMITS_WITH_PARKED, &k).unwrap();
        let _: () = redis().zadd(keys::RATE_PARKED, &k, 1).unwrap();
        let mut s = scene("unpark", &q, &uuid, vec![k.clone(), "10".into()]);
        s.jids = jobs.iter().map(|j| jid_of(j)).collect();
        s.limits = vec![k];
        s
    });
    assert_all_ok(&table);
}
