//! Rates (starts per period), against a real Redis, with no Ruby: a queue's
//! rate keeps its jobs queued while its window is full; a job limit's parks
//! its jobs, in order, and the first fetch after the window opens sends them
//! back first; a fetcher with nothing else to do wakes as it opens.
//!
//! Start times are taken where the fetch returns, which the script's own
//! clock precedes by part of a round trip, and by more on a loaded machine
//! (a thread not scheduled at once): windows are checked with `SLACK` of
//! it. A start too many in a window shows as starts taken together, far
//! closer than the period less `SLACK`.

mod support;

use std::time::{Duration, Instant};

use limit_fetch_core::{keys, Capsule, Fetched, Interrupt, Wait};
use redis::Commands;
use support::{capsule, capsule_whose_acks_ride, jid_of, push_jobs, queue, redis};

/// How far apart two fetches' returns may be from their scripts' clock.
const SLACK: Duration = Duration::from_millis(30);

/// A job limit's entry in a payload: (id, concurrency if any, rate).
type Entry<'a> = (&'a str, Option<u64>, (u64, f64));

fn job(queue: &str, jid: &str, limits: &[Entry]) -> String {
    let limits: Vec<String> = limits
        .iter()
        .map(|(id, concurrency, (limit, period))| {
            let concurrency =
                concurrency.map_or(String::new(), |c| format!(r#","concurrency":{c}"#));
            format!(r#"{{"id":"{id}"{concurrency},"rate":[{limit},{period}]}}"#)
        })
        .collect();
    format!(
        r#"{{"limit_fetch":[{}],"queue":"{queue}","class":"RateJob","args":[],"jid":"{jid}"}}"#,
        limits.join(",")
    )
}

fn plain(queue: &str, jid: &str) -> String {
    format!(r#"{{"queue":"{queue}","class":"PlainJob","args":[],"jid":"{jid}"}}"#)
}

fn id(label: &str) -> String {
    format!("RateJob-{label}-{}", uuid::Uuid::new_v4())
}

fn jid(fetched: &Fetched) -> String {
    jid_of(&String::from_utf8_lossy(&fetched.job))
}

fn fetch_now(capsule: &Capsule, q: &str) -> Option<Fetched> {
    capsule.fetch(&[q], &Interrupt::new()).unwrap()
}

/// A fetch that waits up to `timeout` for a job, as a processor's does.
fn fetch_waiting(capsule: &Capsule, q: &str, timeout: Duration) -> Option<Fetched> {
    let wait = Wait {
        timeout,
        poll: Duration::from_millis(100),
    };
    capsule
        .start_fetch(&[q], wait)
        .unwrap()
        .wait(&Interrupt::new())
        .unwrap()
}

/// Fails if any window of `period` holds more than `limit` starts, each
/// known to lie between when its fetch was asked for (`asked`) and when it
/// returned (`returned`): a start and the `limit`-th before it are a
/// period apart, so the first's return is at least that after the
/// other's asking, whatever a loaded machine delays.
fn assert_windows(asked: &[Instant], returned: &[Instant], limit: usize, period: Duration) {
    for (i, later) in returned.iter().enumerate().skip(limit) {
        let apart = later.duration_since(asked[i - limit]);
        assert!(
            apart + Duration::from_millis(1) >= period,
            "start {i} returned {apart:?} after start {} was asked for: {} starts within {period:?}",
            i - limit,
            limit + 1
        );
    }
}

fn len(key: &str) -> usize {
    redis().llen(key).unwrap()
}

#[test]
fn a_job_limits_rate_lets_no_more_start_in_any_window_and_is_reached() {
    let q = queue("class-rate");
    let k = id("class");
    let period = Duration::from_millis(400);
    let jobs: Vec<String> = (0..10)
        .map(|n| job(&q, &format!("r{n}"), &[(&k, None, (3, 0.4))]))
        .collect();
    push_jobs(&q, &jobs);
    let c = capsule();
    let began = Instant::now();
    let (mut asked, mut starts) = (Vec::new(), Vec::new());
    let mut jids = Vec::new();
    while starts.len() < 10 {
        asked.push(Instant::now());
        let fetched = fetch_waiting(&c, &q, Duration::from_secs(3)).expect("taken within 3 s");
        starts.push(Instant::now());
        jids.push(jid(&fetched));
        c.acknowledge(&q, fetched.job);
    }
    assert_windows(&asked, &starts, 3, period);
    let order: Vec<String> = (0..10).map(|n| format!("r{n}")).collect();
    assert_eq!(jids, order, "parked jobs keep their order");
    // 3 now, 3 at 0.4 s, 3 at 0.8 s, the last at 1.2 s: the rate is reached.
    let last = starts[9].duration_since(began);
    assert!(
        last < Duration::from_millis(1_500),
        "the tenth started at {last:?}"
    );
}

#[test]
fn a_queues_rate_keeps_its_jobs_queued_until_the_window_opens() {
    let q = queue("queue-rate");
    let _: () = redis().set(keys::rate(&q), "2/0.3").unwrap();
    let jobs: Vec<String> = (0..5).map(|n| plain(&q, &format!("p{n}"))).collect();
    push_jobs(&q, &jobs);
    let c = capsule();
    let a = fetch_now(&c, &q).expect("first");
    let b = fetch_now(&c, &q).expect("second");
    let first = Instant::now();
    assert_eq!((jid(&a), jid(&b)), ("p0".to_owned(), "p1".to_owned()));
    assert!(fetch_now(&c, &q).is_none(), "the window is full");
    assert_eq!(
        len(&keys::queue(&q)),
        3,
        "nothing parked: the queue keeps them"
    );
    let third = fetch_waiting(&c, &q, Duration::from_secs(2)).expect("as the window opens");
    let waited = first.elapsed();
    assert_eq!(jid(&third), "p2");
    assert!(
        waited + SLACK >= Duration::from_millis(300) && waited < Duration::from_millis(600),
        "taken {waited:?} after the window filled"
    );
}

#[test]
fn jobs_over_a_rate_are_parked_while_the_queues_other_jobs_run() {
    let q = queue("others-run");
    let k = id("parked");
    let mut jobs: Vec<String> = (0..4)
        .map(|n| job(&q, &format!("r{n}"), &[(&k, None, (1, 0.5))]))
        .collect();
    jobs.extend((0..3).map(|n| plain(&q, &format!("p{n}"))));
    push_jobs(&q, &jobs);
    let c = capsule();
    let taken: Vec<String> = (0..4)
        .filter_map(|_| fetch_now(&c, &q))
        .map(|f| jid(&f))
        .collect();
    assert_eq!(taken, ["r0", "p0", "p1", "p2"]);
    assert_eq!(len(&keys::parked(&k)), 3);
    let due: Option<f64> = redis().zscore(keys::RATE_PARKED, &k).unwrap();
    assert!(due.is_some(), "noted to go when the window opens");
    let next = fetch_waiting(&c, &q, Duration::from_secs(2)).expect("r1 at the window");
    assert_eq!(jid(&next), "r1");
    assert_eq!(len(&keys::parked(&k)), 2);
}

#[test]
fn a_rate_and_a_concurrency_limit_on_one_key_both_hold() {
    let q = queue("both");
    let k = id("both");
    let jobs: Vec<String> = (0..4)
        .map(|n| job(&q, &format!("b{n}"), &[(&k, Some(1), (2, 0.5))]))
        .collect();
    push_jobs(&q, &jobs);
    // Registered, as a processor's: its fetch after b1 hands the run over,
    // whose passed slot the script frees only while the capsule's
    // heartbeat key exists.
    let c = capsule_whose_acks_ride();
    c.register(&Interrupt::new()).unwrap();
    let b0 = fetch_now(&c, &q).expect("b0");
    let began = Instant::now();
    assert!(fetch_now(&c, &q).is_none(), "b1 parked: concurrency 1");
    c.acknowledge(&q, b0.job);
    let b1 = fetch_now(&c, &q).expect("b1 under the slot b0 freed: the rate has room");
    assert_eq!(jid(&b1), "b1");
    c.acknowledge(&q, b1.job);
    assert!(
        fetch_now(&c, &q).is_none(),
        "a slot is free, the rate is not"
    );
    let b2 = fetch_waiting(&c, &q, Duration::from_secs(2)).expect("b2 at the window");
    assert_eq!(jid(&b2), "b2");
    assert!(began.elapsed() + SLACK >= Duration::from_millis(500));
    // Running, b2 holds the key's only slot: b3 waits for it, whatever the
    // rate says.
    assert!(fetch_waiting(&c, &q, Duration::from_millis(700)).is_none());
    c.acknowledge(&q, b2.job);
    let b3 = fetch_waiting(&c, &q, Duration::from_secs(2)).expect("b3");
    assert_eq!(jid(&b3), "b3");
}

#[test]
fn a_stored_rate_stands_for_the_declared_one_and_a_broken_one_lets_nothing_start() {
    let q = queue("stored");
    let k = id("stored");
    let jobs: Vec<String> = (0..3)
        .map(|n| job(&q, &format!("s{n}"), &[(&k, None, (1, 60.0))]))
        .collect();
    push_jobs(&q, &jobs);
    let _: () = redis().set(keys::job_rate(&k), "2/60").unwrap();
    let c = capsule();
    assert!(fetch_now(&c, &q).is_some());
    assert!(
        fetch_now(&c, &q).is_some(),
        "the stored 2/60, not the declared 1/60"
    );
    assert!(fetch_now(&c, &q).is_none());
    let q2 = queue("broken");
    let k2 = id("broken");
    push_jobs(&q2, &[job(&q2, "x", &[(&k2, None, (5, 1.0))])]);
    for broken in ["abc", "5", "5/0", "5/0.01", "-1/1", "5/1s"] {
        let _: () = redis().set(keys::job_rate(&k2), broken).unwrap();
        assert!(
            fetch_now(&c, &q2).is_none(),
            "{broken:?} reads as no start at all"
        );
        let _: () = redis()
            .rpoplpush(keys::parked(&k2), keys::queue(&q2))
            .unwrap();
    }
    let _: () = redis().del(keys::job_rate(&k2)).unwrap();
    assert!(fetch_now(&c, &q2).is_some(), "the declared 5/1 again");
}

#[test]
fn an_idle_rate_leaves_nothing_in_redis_once_its_window_passed() {
    let q = queue("idle");
    let k = id("idle");
    let _: () = redis().set(keys::rate(&q), "1/0.2").unwrap();
    let jobs: Vec<String> = (0..2)
        .map(|n| job(&q, &format!("i{n}"), &[(&k, None, (1, 0.2))]))
        .collect();
    push_jobs(&q, &jobs);
    let c = capsule();
    for _ in 0..2 {
        let fetched = fetch_waiting(&c, &q, Duration::from_secs(2)).expect("taken");
        c.acknowledge(&q, fetched.job);
    }
    c.flush(&Interrupt::new()).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let mut conn = redis();
    for key in [
        keys::starts(&q),
        keys::job_starts(&k),
        keys::parked(&k),
        keys::job_released(&k),
    ] {
        let exists: bool = conn.exists(&key).unwrap();
        assert!(!exists, "{key} left behind");
    }
    let due: Option<f64> = conn.zscore(keys::RATE_PARKED, &k).unwrap();
    assert_eq!(due, None);
}

/// The hand-over's hint, kept with the set it mirrors.
#[test]
fn the_first_due_time_is_kept_beside_the_parked_rates() {
    // Both read at once: other tests' scripts change them, together.
    let mirrored = || {
        let (first, hint): (Vec<(String, f64)>, Option<String>) = redis::pipe()
            .atomic()
            .zrange_withscores(keys::RATE_PARKED, 0, 0)
            .get(keys::RATE_DUE)
            .query(&mut redis())
            .unwrap();
        let hint = hint.map(|text| text.parse::<f64>().unwrap());
        assert_eq!(
            hint,
            first.first().map(|(_, at)| *at),
            "{first:?} against {hint:?}"
        );
        first.len()
    };
    let q = queue("due");
    let k = id("due");
    let jobs: Vec<String> = (0..2)
        .map(|n| job(&q, &format!("d{n}"), &[(&k, None, (1, 0.3))]))
        .collect();
    push_jobs(&q, &jobs);
    let c = capsule();
    let first = fetch_now(&c, &q).expect("d0");
    assert!(fetch_now(&c, &q).is_none(), "d1 parked");
    assert_eq!(mirrored(), 1);
    c.acknowledge(&q, first.job);
    let second = fetch_waiting(&c, &q, Duration::from_secs(2)).expect("d1");
    c.acknowledge(&q, second.job);
    c.flush(&Interrupt::new()).unwrap();
    mirrored();
}

/// A processor handing over one job after another never runs the script:
/// its jobs parked behind a rate still go once their window opens.
#[test]
fn a_processor_handing_over_jobs_still_lets_parked_ones_go_when_their_window_opens() {
    let q = queue("chain");
    let k = id("chain");
    let mut jobs = vec![
        job(&q, "r0", &[(&k, None, (1, 0.3))]),
        job(&q, "r1", &[(&k, None, (1, 0.3))]),
    ];
    jobs.extend((0..400).map(|n| plain(&q, &format!("p{n}"))));
    push_jobs(&q, &jobs);
    let c = capsule_whose_acks_ride();
    let began = Instant::now();
    let mut held = fetch_now(&c, &q);
    let mut r1_at = None;
    while let Some(fetched) = held.take() {
        if jid(&fetched) == "r1" {
            r1_at = Some(began.elapsed());
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
        c.acknowledge(&q, fetched.job);
        held = fetch_now(&c, &q);
    }
    let r1_at = r1_at.expect("r1 taken before the queue ran dry");
    assert!(
        r1_at + SLACK >= Duration::from_millis(300) && r1_at < Duration::from_millis(700),
        "r1 taken {r1_at:?} in"
    );
}

/// A queue's rate is the script's to count: a processor's hand-over does
/// not pass its slot past it.
#[test]
fn a_queues_rate_stops_the_hand_over() {
    let q = queue("handed-rate");
    let _: () = redis().set(keys::rate(&q), "3/60").unwrap();
    let jobs: Vec<String> = (0..6).map(|n| plain(&q, &format!("h{n}"))).collect();
    push_jobs(&q, &jobs);
    let c = capsule_whose_acks_ride();
    let mut taken = 0;
    let mut held = fetch_now(&c, &q);
    let trips = c.round_trips();
    while let Some(fetched) = held.take() {
        taken += 1;
        c.acknowledge(&q, fetched.job);
        held = fetch_now(&c, &q);
    }
    assert_eq!(taken, 3);
    assert_eq!(len(&keys::queue(&q)), 3);
    // Nor is one tried: a queue with a rate pays the script alone.
    assert_eq!(c.round_trips() - trips, 3, "one round trip a fetch");
}

/// A fetcher sleeping in another capsule (another process) learns when a
/// job parked by the first may go, and takes it then.
#[test]
fn a_fetcher_elsewhere_wakes_as_the_window_of_a_job_parked_by_another_opens() {
    let q = queue("elsewhere");
    let k = id("elsewhere");
    let jobs: Vec<String> = (0..2)
        .map(|n| job(&q, &format!("e{n}"), &[(&k, None, (1, 0.4))]))
        .collect();
    push_jobs(&q, &jobs);
    let a = capsule();
    // Before e0's start: e1's window opens at least 400 ms after this
    // (however late a loaded machine runs this thread after the fetch).
    let asked = Instant::now();
    let first = fetch_now(&a, &q).expect("e0");
    let filled = Instant::now();
    assert!(fetch_now(&a, &q).is_none(), "e1 parked by a");
    let b = capsule();
    let taken = fetch_waiting(&b, &q, Duration::from_secs(2)).expect("e1, by b");
    assert_eq!(jid(&taken), "e1");
    let (after_asked, waited) = (asked.elapsed(), filled.elapsed());
    assert!(
        after_asked + Duration::from_millis(1) >= Duration::from_millis(400),
        "b took it {after_asked:?} after e0 was asked for"
    );
    assert!(
        waited < Duration::from_millis(600),
        "b took it {waited:?} after the window filled"
    );
    a.acknowledge(&q, first.job);
    b.acknowledge(&q, taken.job);
}
