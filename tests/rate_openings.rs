//! A rate's window opening, seen by a capsule's idle fetchers, against a
//! real Redis of this test binary's own (its scripts are counted): one
//! fetcher wakes and takes the job the window lets go, the others sleep on;
//! `rate_wake`, what their doorbell tracks, is never later than the first
//! opening, is not written as openings move it later, and goes with the
//! last parked job; limits parked by an older version, without it, are
//! found as their window opens too; jobs parked behind a far window cost
//! idle fetchers nothing.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use limit_fetch_core::{keys, Capsule, Interrupt, Wait};
use redis::Commands;
use support::{capsule, capsule_with_period, jid_of, push_jobs, queue, redis};

/// Scripts Redis ran so far (every call of the gem's functions).
fn scripts() -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut redis())
        .unwrap();
    info.lines()
        .filter_map(|line| line.strip_prefix("cmdstat_fcall:calls="))
        .filter_map(|rest| rest.split(',').next()?.parse::<u64>().ok())
        .sum()
}

/// The tests share Redis's rate-parked set, `rate_wake` and its count of
/// scripts: one at a time.
static TURN: Mutex<()> = Mutex::new(());

fn turn() -> MutexGuard<'static, ()> {
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

/// 16 windows open one after another (a rate of 1 per 0.25 s) while 10
/// fetchers idle: every opening runs the look that takes its job and the
/// look that carries its acknowledgement (and finds nothing), 2 scripts;
/// and the last, no more (the keys it deletes are read again, plainly: a
/// waiter woken to look would arm the bell again, 3 scripts; 2 allowed
/// here, for the backstop's look).
/// Nothing else is tied to an opening: a fetcher whose wait ends trusts
/// the look before the ring, the two looks that see the next opening set
/// one timer however far apart their replies come, and the doorbell's
/// backstop looks once per 5 s; 2.0 to 2.2 with the machine's load at 10
/// on its 2 vCPUs. The bound leaves that room; an opening whose job wrote
/// its queue, or whose ring woke every fetcher to look, runs 4 or more (5
/// to 7 under load, once the bookkeeping every opening writes was tracked:
/// by an arming that read `rate_parked`, or by a fetcher's first look sent
/// on the tracking connection).
#[test]
fn a_windows_opening_wakes_one_of_ten_idle_fetchers() {
    let _turn = turn();
    const OPENINGS: usize = 16;
    let q = queue("openings");
    let id = format!("RateJob-openings-{}", uuid::Uuid::new_v4());
    let jobs = rated_jobs(&q, &id, "[1,0.25]", "o", OPENINGS + 1);
    let c = capsule();
    let taken = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicUsize::new(0));
    // Waits that end about once a window: a fetcher that fetches again
    // trusts what a look after the opening found.
    let wait = Wait {
        timeout: Duration::from_millis(300),
        poll: Duration::from_millis(100),
    };
    let fetchers = idle_fetchers(&c, &q, wait, &stop, {
        let taken = taken.clone();
        move |job: &[u8]| {
            let jid = jid_of(&String::from_utf8_lossy(job));
            taken.lock().unwrap().push((jid, Instant::now(), scripts()));
        }
    });
    // All asleep on the doorbell.
    std::thread::sleep(Duration::from_millis(500));
    push_jobs(&q, &jobs);
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut wakes = Vec::new();
    while taken.lock().unwrap().len() <= OPENINGS && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        let (first, wake) = parked_rates();
        if let Some(wake) = wake {
            let first = first.expect("rate_wake goes with the parked rates");
            assert!(
                wake <= first,
                "rate_wake {wake} after the first opening {first}"
            );
            wakes.push(wake);
        }
    }
    // The last job's going deletes what the doorbell tracks of the rates
    // (rate_wake, rate_due): read again, it wakes nobody to look.
    std::thread::sleep(Duration::from_millis(300));
    let ended = scripts();
    stop.store(1, Ordering::SeqCst);
    let taken = taken.lock().unwrap().clone();
    assert_eq!(taken.len(), OPENINGS + 1, "{taken:?}");
    let after_last = ended - taken[OPENINGS].2;
    eprintln!("{after_last} scripts after the last job was taken");
    assert!(
        after_last <= 2,
        "{after_last} scripts after the last job was taken: its acknowledgement's, and a look and an arming"
    );
    // From the first opening's job to the last's, by Redis's count of
    // calls of the gem's functions.
    let (first, last) = (taken[1].2, taken[OPENINGS].2);
    let per_opening = (last - first) as f64 / (OPENINGS - 1) as f64;
    eprintln!("{per_opening:.2} scripts per opening");
    assert!(
        per_opening <= 3.0,
        "{per_opening:.1} scripts per opening ({} in all)",
        last - first
    );
    for pair in taken.windows(2) {
        let apart = pair[1].1.duration_since(pair[0].1);
        assert!(
            apart + Duration::from_millis(30) >= Duration::from_millis(250),
            "{apart:?}"
        );
    }
    // Each opening moves the first opening later: rate_wake, written
    // only when it moves earlier, stays as the first parking set it.
    wakes.dedup();
    assert_eq!(wakes.len(), 1, "rate_wake written again: {wakes:?}");
    for fetcher in fetchers {
        fetcher.join().unwrap();
    }
    c.flush(&Interrupt::new()).unwrap();
    assert_eq!(
        parked_rates(),
        (None, None),
        "nothing left once the last went"
    );
}

/// A window's job goes straight into the in-progress list of the fetch
/// that let it go; when that fetch takes another (an earlier queue's), the
/// job goes on to the front of its own queue, ahead of a job pushed after
/// it was parked, and nothing of it is left in the in-progress list.
#[test]
fn a_windows_job_the_fetch_does_not_take_goes_to_the_front_of_its_queue() {
    let _turn = turn();
    let (q, ahead) = (queue("opened"), queue("opened-ahead"));
    let id = format!("RateJob-opened-{}", uuid::Uuid::new_v4());
    let rated = |jid: &str| {
        format!(
            r#"{{"limit_fetch":[{{"id":"{id}","rate":[1,0.2]}}],"queue":"{q}","class":"RateJob","args":[],"jid":"{jid}"}}"#
        )
    };
    let c = capsule();
    let none = Interrupt::new();
    push_jobs(&q, &[rated("first"), rated("parked")]);
    let first = c.fetch(&[&q], &none).unwrap().expect("the first job");
    assert_eq!(jid_of(&String::from_utf8_lossy(&first.job)), "first");
    c.acknowledge(&q, first.job);
    // Parked behind the rate: the next look sets it aside.
    assert!(c.fetch(&[&q], &none).unwrap().is_none());
    push_jobs(
        &q,
        &[format!(
            r#"{{"queue":"{q}","class":"Plain","args":[],"jid":"later"}}"#
        )],
    );
    push_jobs(
        &ahead,
        &[format!(
            r#"{{"queue":"{ahead}","class":"Plain","args":[],"jid":"ahead"}}"#
        )],
    );
    std::thread::sleep(Duration::from_millis(260));
    let taken = c
        .fetch(&[&ahead, &q], &none)
        .unwrap()
        .expect("the earlier queue's job");
    assert_eq!(jid_of(&String::from_utf8_lossy(&taken.job)), "ahead");
    let mut conn = redis();
    let left: Vec<String> = conn.lrange(keys::in_progress(c.uuid(), &q), 0, -1).unwrap();
    assert!(left.is_empty(), "left in the in-progress list: {left:?}");
    let queued: Vec<String> = conn.lrange(keys::queue(&q), 0, -1).unwrap();
    let jids: Vec<String> = queued.iter().map(|j| jid_of(j)).collect();
    // Sidekiq takes from the right: the window's job is next.
    assert_eq!(jids, ["later", "parked"]);
    c.acknowledge(&ahead, taken.job);
    let next = c.fetch(&[&q], &none).unwrap().expect("the window's job");
    assert_eq!(jid_of(&String::from_utf8_lossy(&next.job)), "parked");
    assert!(next.queue == q);
    c.acknowledge(&q, next.job);
    c.flush(&Interrupt::new()).unwrap();
}

/// A job limit parked behind its rate by an older version of the gem:
/// `rate_parked` and `rate_due` written, no `rate_wake`. An idle fetcher
/// armed before takes its job as the window opens, not at its next look
/// (a 4 s wait here; 5 s, the doorbell's backstop, in a process).
#[test]
fn a_window_parked_by_an_older_version_wakes_an_idle_fetcher() {
    let _turn = turn();
    let q = queue("older");
    let id = format!("RateJob-older-{}", uuid::Uuid::new_v4());
    let job = format!(
        r#"{{"limit_fetch":[{{"id":"{id}","rate":[1,60]}}],"queue":"{q}","class":"RateJob","args":[],"jid":"older"}}"#
    );
    let c = capsule();
    let fetcher = {
        let (c, q) = (c.clone(), q.clone());
        std::thread::spawn(move || {
            let wait = Wait {
                timeout: Duration::from_secs(4),
                poll: Duration::from_millis(100),
            };
            let fetched = c
                .start_fetch(&[&q], wait)
                .unwrap()
                .wait(&Interrupt::new())
                .unwrap();
            (fetched.map(|f| f.job), Instant::now())
        })
    };
    // Asleep on the doorbell.
    std::thread::sleep(Duration::from_millis(400));
    let mut conn = redis();
    let _: () = redis::cmd("DEL")
        .arg(keys::RATE_WAKE)
        .query(&mut conn)
        .unwrap();
    let (secs, micros): (u64, u64) = redis::cmd("TIME").query(&mut conn).unwrap();
    let opens = secs * 1_000_000 + micros + 400_000;
    let _: () = conn.lpush(keys::parked(&id), &job).unwrap();
    let _: () = conn.sadd(keys::LIMITS_WITH_PARKED, &id).unwrap();
    let _: () = conn.zadd(keys::RATE_PARKED, &id, opens).unwrap();
    let _: () = conn.set(keys::RATE_DUE, opens).unwrap();
    let parked_at = Instant::now();
    let (job, at) = fetcher.join().unwrap();
    let job = job.expect("its job, as its window opened");
    assert_eq!(jid_of(&String::from_utf8_lossy(&job)), "older");
    let after = at.duration_since(parked_at);
    eprintln!("taken {after:?} after it was parked, to open 400 ms after");
    assert!(
        after < Duration::from_millis(1_500),
        "taken {after:?} after it was parked"
    );
    c.acknowledge(&q, job);
    c.flush(&Interrupt::new()).unwrap();
    assert_eq!(parked_rates(), (None, None), "nothing left");
}

/// Jobs parked behind a rate whose window opens in an hour cost an idle
/// capsule nothing: its 10 fetchers, each fetching again as its 2 s wait
/// ends (Sidekiq's loop), send Redis no more commands than with nothing
/// parked: the doorbell's backstop, one look per capsule per 5 s (2
/// commands here; at most two looks fall in a window of 5 s). A fetcher
/// that looked again at each wait's end would send 10 scripts every 2 s; a
/// ring set for now rather than for the window's opening, ~100 a second.
#[test]
fn jobs_parked_behind_a_far_window_cost_an_idle_capsule_nothing() {
    let _turn = turn();
    let q = queue("far");
    let id = format!("RateJob-far-{}", uuid::Uuid::new_v4());
    let jobs = rated_jobs(&q, &id, "[1,3600]", "f", 3);
    let c = capsule_with_period(Duration::from_secs(600));
    let taken = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicUsize::new(0));
    let wait = Wait {
        timeout: Duration::from_secs(2),
        poll: Duration::from_secs(1),
    };
    let fetchers = idle_fetchers(&c, &q, wait, &stop, {
        let taken = taken.clone();
        move |_: &[u8]| {
            taken.fetch_add(1, Ordering::SeqCst);
        }
    });
    std::thread::sleep(Duration::from_millis(500));
    let nothing_parked = commands_over(Duration::from_secs(5));
    push_jobs(&q, &jobs);
    let deadline = Instant::now() + Duration::from_secs(10);
    let parked = || -> usize { redis().llen(keys::parked(&id)).unwrap() };
    while (taken.load(Ordering::SeqCst) < 1 || parked() < 2) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!((taken.load(Ordering::SeqCst), parked()), (1, 2));
    std::thread::sleep(Duration::from_millis(300));
    let with_parked = commands_over(Duration::from_secs(5));
    eprintln!("commands in 5 s: nothing parked {nothing_parked}, jobs parked {with_parked}");
    assert!(
        with_parked <= nothing_parked.max(4) && nothing_parked <= 4,
        "{with_parked} commands in 5 s with jobs parked, {nothing_parked} with nothing parked"
    );
    assert_eq!(parked(), 2, "the window is an hour away");
    stop.store(1, Ordering::SeqCst);
    for fetcher in fetchers {
        fetcher.join().unwrap();
    }
    c.flush(&Interrupt::new()).unwrap();
    let _: () = redis::cmd("DEL")
        .arg(keys::parked(&id))
        .arg(keys::RATE_PARKED)
        .arg(keys::RATE_WAKE)
        .arg(keys::RATE_DUE)
        .query(&mut redis())
        .unwrap();
    let _: () = redis().srem(keys::LIMITS_WITH_PARKED, &id).unwrap();
}

/// The commands Redis ran in `window` (`INFO`'s own left out).
fn commands_over(window: Duration) -> u64 {
    let count = || -> u64 {
        let info: String = redis::cmd("INFO")
            .arg("commandstats")
            .query(&mut redis())
            .unwrap();
        info.lines()
            .filter(|line| !line.starts_with("cmdstat_info:"))
            .filter_map(|line| line.split_once(":calls="))
            .filter_map(|(_, rest)| rest.split(',').next()?.parse::<u64>().ok())
            .sum()
    };
    let before = count();
    std::thread::sleep(window);
    count() - before
}

/// `count` jobs of queue `q` carrying job limit `id` with `rate` (JSON
/// `[limit, period]`), their jids `prefix` and 0, 1...
fn rated_jobs(q: &str, id: &str, rate: &str, prefix: &str, count: usize) -> Vec<String> {
    (0..count)
        .map(|n| {
            format!(
                r#"{{"limit_fetch":[{{"id":"{id}","rate":{rate}}}],"queue":"{q}","class":"RateJob","args":[],"jid":"{prefix}{n}"}}"#
            )
        })
        .collect()
}

/// 10 fetchers of `q`, each fetching again as its `wait` ends (Sidekiq's
/// loop) until `stop` is set; `taken` sees each job fetched before it is
/// acknowledged.
fn idle_fetchers<F>(
    c: &Capsule,
    q: &str,
    wait: Wait,
    stop: &Arc<AtomicUsize>,
    taken: F,
) -> Vec<JoinHandle<()>>
where
    F: Fn(&[u8]) + Clone + Send + 'static,
{
    (0..10)
        .map(|_| {
            let (c, q, stop, taken) = (c.clone(), q.to_string(), stop.clone(), taken.clone());
            std::thread::spawn(move || {
                while stop.load(Ordering::SeqCst) == 0 {
                    let fetched = c.start_fetch(&[&q], wait).unwrap().wait(&Interrupt::new());
                    if let Some(fetched) = fetched.unwrap() {
                        taken(&fetched.job);
                        c.acknowledge(&q, fetched.job);
                    }
                }
            })
        })
        .collect()
}

/// The first opening in `rate_parked` and `rate_wake`, read at once.
fn parked_rates() -> (Option<f64>, Option<f64>) {
    let (first, wake): (Vec<(String, f64)>, Option<f64>) = redis::pipe()
        .atomic()
        .zrange_withscores(keys::RATE_PARKED, 0, 0)
        .get(keys::RATE_WAKE)
        .query(&mut redis())
        .unwrap();
    (first.first().map(|(_, at)| *at), wake)
}
