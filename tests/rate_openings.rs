//! A rate's window opening, seen by a capsule's idle fetchers, against a
//! real Redis of this test binary's own (its scripts are counted): one
//! fetcher wakes and takes the job the window lets go, the others sleep on;
//! `rate_wake`, what their doorbell tracks, is never later than the first
//! opening, is not written as openings move it later, and goes with the
//! last parked job.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use limit_fetch_core::{keys, Interrupt, Wait};
use support::{capsule, jid_of, push_jobs, queue, redis};

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

#[test]
fn a_windows_opening_wakes_one_of_ten_idle_fetchers() {
    const OPENINGS: usize = 8;
    let q = queue("openings");
    let id = format!("RateJob-openings-{}", uuid::Uuid::new_v4());
    let jobs: Vec<String> = (0..=OPENINGS)
        .map(|n| {
            format!(
                r#"{{"limit_fetch":[{{"id":"{id}","rate":[1,0.25]}}],"queue":"{q}","class":"RateJob","args":[],"jid":"o{n}"}}"#
            )
        })
        .collect();
    let c = capsule();
    let taken = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicUsize::new(0));
    let fetchers: Vec<_> = (0..10)
        .map(|_| {
            let (c, q, taken, stop) = (c.clone(), q.clone(), taken.clone(), stop.clone());
            std::thread::spawn(move || {
                // Waits that end about once a window: a fetcher that
                // fetches again trusts what a look after the opening found.
                let wait = Wait {
                    timeout: Duration::from_millis(300),
                    poll: Duration::from_millis(100),
                };
                while stop.load(Ordering::SeqCst) == 0 {
                    let fetch = c.start_fetch(&[&q], wait).unwrap();
                    let mut fetch = fetch;
                    if let Some(fetched) = fetch.wait(&Interrupt::new()).unwrap() {
                        let jid = jid_of(&String::from_utf8_lossy(&fetched.job));
                        taken.lock().unwrap().push((jid, Instant::now(), scripts()));
                        c.acknowledge(&q, fetched.job);
                    }
                }
            })
        })
        .collect();
    // All asleep on the doorbell.
    std::thread::sleep(Duration::from_millis(500));
    push_jobs(&q, &jobs);
    let deadline = Instant::now() + Duration::from_secs(6);
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
    stop.store(1, Ordering::SeqCst);
    let taken = taken.lock().unwrap().clone();
    assert_eq!(taken.len(), OPENINGS + 1, "{taken:?}");
    // From the first opening's job to the last's: each later opening's
    // look, and the look that carried the acknowledgement of the job
    // before it; now and then a fetcher whose wait ended looks again (2
    // a window's opening is, where every idle fetcher woke, 8 or more).
    let (first, last) = (taken[1].2, taken[OPENINGS].2);
    let per_opening = (last - first) as f64 / (OPENINGS - 1) as f64;
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
