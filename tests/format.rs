//! The data format in force (`keys::FORMAT`, src/format.rs), against a
//! real Redis with real capsules: each says with its registration that it
//! speaks format 2 (`keys::FORMATS`), and the census (the beat that takes
//! `keys::CENSUS`) puts 2 in force once every live capsule speaks it, and 1
//! back as soon as one does not: a capsule of an older release (registered
//! as today's main registers: the sets, a heartbeat, an entry in
//! `keys::BEATS`, no format) or of v5 (the capsules set and a heartbeat
//! alone). `format 1` pins 1, which the census leaves; `format auto` lets it
//! decide again. The fetch reads the format in its first MGET, with no
//! command more; other scripts read it once a call.

mod support;

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use limit_fetch_core::format::InForce;
use limit_fetch_core::{keys, Capsule, Interrupt, Limits};
use redis::Commands;
use support::{capsule, census_due, command_calls, eval_after_prelude, queue, redis, settings};

/// The format and the registered capsules are the whole Redis's: one test
/// at a time, each from a Redis with no capsule registered.
static TURN: Mutex<()> = Mutex::new(());

fn turn() -> MutexGuard<'static, ()> {
    let guard = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let _: () = redis()
        .del(&[
            keys::FORMAT,
            keys::FORMATS,
            keys::CAPSULES,
            keys::REGISTERED,
            keys::BEATS,
            keys::CENSUS,
            keys::OUTAGE,
        ])
        .unwrap();
    guard
}

/// Deregisters a test's capsules even when it fails.
struct Fleet(Vec<Capsule>);

impl Fleet {
    /// `n` registered capsules of this version.
    fn of(n: usize) -> Self {
        let fleet = Fleet((0..n).map(|_| capsule()).collect());
        for c in &fleet.0 {
            c.register(&Interrupt::new()).unwrap();
        }
        fleet
    }

    /// One beat of the first capsule, which takes the census: the data
    /// format it put in force, if it changed it.
    fn census(&self) -> Option<u8> {
        census_due();
        let report = self.0[0].beat(&Interrupt::new()).unwrap();
        let taker: Option<String> = redis().get(keys::CENSUS).unwrap();
        assert_eq!(taker.as_deref(), Some(self.0[0].uuid()), "took the census");
        report.format_switched
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for c in &self.0 {
            let _ = c.deregister(&[] as &[&str], &Interrupt::new());
        }
    }
}

fn stored() -> Option<String> {
    redis().get(keys::FORMAT).unwrap()
}

fn in_force() -> InForce {
    InForce::parse(stored().as_deref())
}

/// Redis's clock, in milliseconds.
fn redis_ms() -> u64 {
    let (secs, micros): (u64, u64) = redis::cmd("TIME").query(&mut redis()).unwrap();
    secs * 1000 + micros / 1000
}

/// Another process's capsule, registered as it registers: with an entry in
/// `keys::BEATS` (today's main, an older release of this gem), or with
/// none (v5). Neither says a format.
struct Other {
    uuid: String,
    beats: bool,
}

impl Other {
    fn older_release() -> Self {
        Self::start(true)
    }

    fn v5() -> Self {
        Self::start(false)
    }

    fn start(beats: bool) -> Self {
        let uuid = uuid::Uuid::new_v4().to_string();
        let mut conn = redis();
        let _: () = conn.set_ex(keys::heartbeat(&uuid), "1", 60).unwrap();
        let _: () = conn.sadd(keys::CAPSULES, &uuid).unwrap();
        if beats {
            let _: () = conn.sadd(keys::REGISTERED, &uuid).unwrap();
            let _: () = conn.zadd(keys::BEATS, &uuid, redis_ms() + 60_000).unwrap();
        }
        Self { uuid, beats }
    }

    /// Stopped as it stops: its registration gone.
    fn stop(&self) {
        let mut conn = redis();
        let _: () = conn.del(keys::heartbeat(&self.uuid)).unwrap();
        let _: () = conn.srem(keys::CAPSULES, &self.uuid).unwrap();
        if self.beats {
            let _: () = conn.srem(keys::REGISTERED, &self.uuid).unwrap();
            let _: () = conn.zrem(keys::BEATS, &self.uuid).unwrap();
        }
    }
}

impl Drop for Other {
    fn drop(&mut self) {
        self.stop();
    }
}

#[test]
fn a_fleet_of_this_version_switches_to_format_2_at_a_census() {
    let _turn = turn();
    let fleet = Fleet::of(3);
    let spoken: HashMap<String, u8> = redis().hgetall(keys::FORMATS).unwrap();
    for c in &fleet.0 {
        assert_eq!(spoken.get(c.uuid()), Some(&2), "said with its registration");
    }
    // Beats that take no census decide nothing.
    let _: () = redis().set(keys::CENSUS, "another").unwrap();
    fleet.0[1].beat(&Interrupt::new()).unwrap();
    assert_eq!(stored(), None, "no census, no format written");
    let before = redis_ms();
    assert_eq!(fleet.census(), Some(2), "the beat says it switched");
    let after = redis_ms();
    let now = in_force();
    assert_eq!((now.format, now.pinned), (2, false), "{:?}", stored());
    assert!(
        (before..=after).contains(&now.since_ms),
        "since {} within the census ({before}..{after})",
        now.since_ms
    );
    // Written only on a change: the next census leaves it as it was.
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(fleet.census(), None, "nothing switched");
    assert_eq!(in_force(), now);
}

#[test]
fn a_capsule_of_an_older_release_keeps_format_1_and_brings_it_back() {
    let _turn = turn();
    let fleet = Fleet::of(2);
    let old = Other::older_release();
    assert_eq!(fleet.census(), None, "1 kept: no switch");
    assert_eq!(stored(), None, "format 1 kept, and not written");
    old.stop();
    assert_eq!(fleet.census(), Some(2));
    assert_eq!(in_force().format, 2);
    let switched = in_force().since_ms;
    // One starts again (a rollback, a frozen one thawed): back to 1.
    let again = Other::older_release();
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(fleet.census(), Some(1), "the beat says it switched back");
    let now = in_force();
    assert_eq!((now.format, now.pinned), (1, false));
    assert!(now.since_ms > switched, "since the census that saw it");
    drop(again);
    fleet.census();
    assert_eq!(in_force().format, 2, "gone: 2 again");
}

#[test]
fn a_v5_capsule_keeps_format_1_and_brings_it_back() {
    let _turn = turn();
    let fleet = Fleet::of(2);
    let v5 = Other::v5();
    fleet.census();
    assert_eq!(stored(), None, "format 1 kept");
    v5.stop();
    fleet.census();
    assert_eq!(in_force().format, 2);
    let _again = Other::v5();
    fleet.census();
    assert_eq!(in_force().format, 1, "a v5 capsule came: back to 1");
}

#[test]
fn a_dead_capsule_of_an_older_release_counts_for_nothing_and_is_reaped() {
    let _turn = turn();
    let fleet = Fleet::of(1);
    let old = Other::older_release();
    // Its heartbeat expired, its entry past: dead, not yet reaped.
    let _: () = redis().del(keys::heartbeat(&old.uuid)).unwrap();
    let _: () = redis().zadd(keys::BEATS, &old.uuid, 0).unwrap();
    fleet.census();
    assert_eq!(in_force().format, 2);
    let registered: bool = redis().sismember(keys::REGISTERED, &old.uuid).unwrap();
    assert!(!registered, "reaped by the same beat");
}

#[test]
fn a_reaped_or_deregistered_capsule_leaves_the_formats() {
    let _turn = turn();
    let fleet = Fleet::of(1);
    let (dead, gone) = (capsule(), capsule());
    for c in [&dead, &gone] {
        c.register(&Interrupt::new()).unwrap();
    }
    let spoken = |uuid: &str| -> bool { redis().hexists(keys::FORMATS, uuid).unwrap() };
    assert!(spoken(dead.uuid()) && spoken(gone.uuid()));
    gone.deregister(&[] as &[&str], &Interrupt::new()).unwrap();
    assert!(!spoken(gone.uuid()), "deregistered");
    support::expire(dead.uuid());
    let report = fleet.0[0].beat(&Interrupt::new()).unwrap();
    assert!(report.reaped.iter().any(|r| r.uuid == dead.uuid()));
    assert!(!spoken(dead.uuid()), "reaped");
    assert!(spoken(fleet.0[0].uuid()));
}

#[test]
fn an_idle_beat_sends_no_command_for_the_format_and_a_restored_one_says_it_again() {
    let _turn = turn();
    let fleet = Fleet::of(1);
    let c = &fleet.0[0];
    // Another's census this period: the beat is an idle capsule's own.
    let _: () = redis().set(keys::CENSUS, "another").unwrap();
    let mut conn = redis();
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query(&mut conn)
        .unwrap();
    c.beat(&Interrupt::new()).unwrap();
    let ran = command_calls(&mut conn);
    let count = |name: &str| ran.get(name).copied().unwrap_or(0);
    assert_eq!(count("hset"), 0, "{ran:?}");
    assert_eq!(count("hgetall"), 0, "{ran:?}");
    // Reaped while alive (frozen): its next beat says it again.
    let _: () = redis().hdel(keys::FORMATS, c.uuid()).unwrap();
    let _: () = redis().del(keys::heartbeat(c.uuid())).unwrap();
    c.beat(&Interrupt::new()).unwrap();
    let spoken: Option<u8> = redis().hget(keys::FORMATS, c.uuid()).unwrap();
    assert_eq!(spoken, Some(2));
}

#[test]
fn pinned_format_1_stays_until_auto() {
    let _turn = turn();
    let fleet = Fleet::of(2);
    fleet.census();
    assert_eq!(in_force().format, 2);
    let limits = Limits::new(&settings());
    let none = Interrupt::new();
    let before = redis_ms();
    let change = limits.pin_format_1(&none).unwrap();
    assert_eq!(change.was.format, 2);
    assert_eq!((change.in_force.format, change.in_force.pinned), (1, true));
    assert!(change.in_force.since_ms >= before);
    assert_eq!(change.converted, 0, "no data of format 2 yet");
    assert_eq!(in_force(), change.in_force, "{:?}", stored());
    fleet.census();
    assert_eq!(in_force(), change.in_force, "the census leaves it");
    // Pinned again: nothing moves.
    let again = limits.pin_format_1(&none).unwrap();
    assert_eq!(
        (again.was, again.in_force),
        (change.in_force, change.in_force)
    );
    let read = limits.data_format(&none).unwrap();
    assert_eq!(read.in_force, change.in_force);
    let mut uuids: Vec<(&str, u8)> = read
        .capsules
        .iter()
        .map(|(c, f)| (c.uuid.as_str(), *f))
        .collect();
    uuids.sort();
    let mut want: Vec<(&str, u8)> = fleet.0.iter().map(|c| (c.uuid(), 2)).collect();
    want.sort();
    assert_eq!(uuids, want);
    let auto = limits.unpin_format(&none).unwrap();
    assert_eq!(auto.was, change.in_force);
    assert_eq!(
        auto.in_force,
        InForce {
            pinned: false,
            ..change.in_force
        }
    );
    fleet.census();
    assert_eq!(in_force().format, 2, "the census decides again");
}

#[test]
fn pinning_format_1_in_force_keeps_its_since() {
    let _turn = turn();
    let limits = Limits::new(&settings());
    let change = limits.pin_format_1(&Interrupt::new()).unwrap();
    assert_eq!(stored().as_deref(), Some("1:0:pinned"));
    assert_eq!(change.was.since_ms, 0);
    let auto = limits.unpin_format(&Interrupt::new()).unwrap();
    assert_eq!(stored().as_deref(), Some("1:0"));
    assert!(!auto.in_force.pinned);
}

#[test]
fn the_data_format_lists_live_capsules_an_old_one_as_speaking_1() {
    let _turn = turn();
    let fleet = Fleet::of(1);
    let old = Other::older_release();
    let v5 = Other::v5();
    let dead = Other::older_release();
    let _: () = redis().del(keys::heartbeat(&dead.uuid)).unwrap();
    let read = Limits::new(&settings())
        .data_format(&Interrupt::new())
        .unwrap();
    let mut got: Vec<(String, u8)> = read
        .capsules
        .into_iter()
        .map(|(c, f)| (c.uuid, f))
        .collect();
    got.sort();
    let mut want = vec![
        (fleet.0[0].uuid().to_owned(), 2),
        (old.uuid.clone(), 1),
        (v5.uuid.clone(), 1),
    ];
    want.sort();
    assert_eq!(got, want);
}

/// The script checks again, in its own step, before it puts 2 in force: a
/// census that read no old capsule, one having started since, writes
/// nothing; nor does one that read the format unpinned, pinned since.
#[test]
fn the_census_script_puts_2_in_force_only_if_every_live_capsule_speaks_it() {
    let _turn = turn();
    let _fleet = Fleet::of(1);
    let f = support::function_name("format");
    let census = |target: &str| {
        let _: redis::Value = redis::cmd("FCALL")
            .arg(&f)
            .arg(0)
            .arg("c")
            .arg(target)
            .query(&mut redis())
            .unwrap();
    };
    let old = Other::older_release();
    census("2");
    assert_eq!(stored(), None, "an older release's capsule lives");
    let _: () = redis().del(keys::heartbeat(&old.uuid)).unwrap();
    census("2");
    assert_eq!(in_force().format, 2, "it is dead: its entries do not count");
    census("1");
    assert_eq!(in_force().format, 1, "1 whenever asked");
    // Pinned after the census read: the script leaves it.
    let pinned = Limits::new(&settings())
        .pin_format_1(&Interrupt::new())
        .unwrap();
    census("2");
    assert_eq!(in_force(), pinned.in_force, "pinned: left be");
}

/// The fetch's first MGET carries the format key: it reads it (the key's
/// idle time starts again) with no command of its own.
#[test]
fn the_fetch_reads_the_format_with_no_command_more() {
    let _turn = turn();
    let fleet = Fleet::of(1);
    let c = &fleet.0[0];
    let q = queue("format-fetch");
    let _: () = redis().set(keys::FORMAT, "2:1").unwrap();
    let idle = || -> u64 {
        redis::cmd("OBJECT")
            .arg("IDLETIME")
            .arg(keys::FORMAT)
            .query(&mut redis())
            .unwrap()
    };
    // The library loaded, the capsule's connection open.
    assert!(c.fetch(&[q.as_str()], &Interrupt::new()).unwrap().is_none());
    std::thread::sleep(Duration::from_millis(2100));
    assert!(idle() >= 2);
    let mut conn = redis();
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query(&mut conn)
        .unwrap();
    assert!(c.fetch(&[q.as_str()], &Interrupt::new()).unwrap().is_none());
    let ran = command_calls(&mut conn);
    assert_eq!(idle(), 0, "the fetch read it");
    let count = |name: &str| ran.get(name).copied().unwrap_or(0);
    assert_eq!(count("get"), 0, "{ran:?}");
    assert_eq!(count("mget"), 1, "{ran:?}");
}

/// data_format reads the key once a call, and not at all after the
/// fetch's read handed it the value.
#[test]
fn a_script_reads_the_format_once_a_call() {
    let _turn = turn();
    let _: () = redis().set(keys::FORMAT, "2:1234").unwrap();
    let mut conn = redis();
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query(&mut conn)
        .unwrap();
    let got: Vec<i64> = eval_after_prelude(
        "new_call()
         local f, since = data_format()
         local g, again = data_format()
         return {f, since, g, again}",
        &[],
        &[],
    );
    assert_eq!(got, vec![2, 1_234_000, 2, 1_234_000]);
    assert_eq!(command_calls(&mut conn).get("get").copied(), Some(1));
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query(&mut conn)
        .unwrap();
    let got: Vec<i64> = eval_after_prelude(
        "new_call()
         format_read('1:7:pinned')
         local f, since = data_format()
         new_call()
         local g, again = data_format()
         return {f, since, g, again}",
        &[],
        &[],
    );
    assert_eq!(got, vec![1, 7000, 2, 1_234_000], "a call forgets it");
    assert_eq!(command_calls(&mut conn).get("get").copied(), Some(1));
}

/// The prelude reads the key's value as src/format.rs does.
#[test]
fn the_prelude_and_the_core_read_the_key_alike() {
    let _turn = turn();
    for value in [
        None,
        Some("2:1700000000123"),
        Some("1:5:pinned"),
        Some("2:5:pinned"),
        Some("3:5"),
        Some("2:"),
        Some("2:5:other"),
        Some("2:-5"),
        Some("x"),
        Some(""),
    ] {
        let args: Vec<&str> = value.into_iter().collect();
        let (format, since_us, pinned): (u8, u64, u8) = eval_after_prelude(
            "local f, since, pinned = parse_format(ARGV[1])
             return {f, since, pinned and 1 or 0}",
            &[],
            &args,
        );
        let core = InForce::parse(value);
        assert_eq!(
            (format, since_us, pinned == 1),
            (core.format, core.since_ms * 1000, core.pinned),
            "{value:?}"
        );
    }
}

/// An entry of `formats` that is no number (written by hand) reads as
/// format 1, in the census as in the script: the census's beat goes on.
#[test]
fn an_entry_that_is_no_number_speaks_format_1() {
    let _turn = turn();
    let fleet = Fleet::of(1);
    let odd = Other::older_release();
    let _: () = redis().hset(keys::FORMATS, &odd.uuid, "two").unwrap();
    fleet.census();
    assert_eq!(stored(), None, "format 1 kept");
    let _: () = redis().hset(keys::FORMATS, &odd.uuid, "2").unwrap();
    fleet.census();
    assert_eq!(in_force().format, 2);
}
