use super::*;

#[test]
fn digest_matches_redis_sha1hex() {
    // redis-cli EVAL "return redis.sha1hex('job')" 0
    assert_eq!(
        Digest::of(b"job").hex(),
        "2eda8ad1632af052b0c74d6fcab6058b3a79cf25"
    );
}

/// reconcile.lua names a finished job by as many hex digits as the ledger
/// keeps bytes of its digest.
#[test]
fn reconcile_compares_as_many_digits_as_the_ledger_keeps() {
    let lua = include_str!("../lua/reconcile.lua");
    let key = format!("string.sub(redis.sha1hex(job), 1, {})", PREFIX_BYTES * 2);
    assert!(lua.contains(&key), "reconcile.lua: {key}");
}

#[test]
fn a_fetch_carries_the_acknowledgements_of_its_own_thread() {
    let ack = |thread| Ack {
        queue: "q".into(),
        job: b"j".to_vec(),
        digest: Digest::of(b"j"),
        thread,
        at: Instant::now(),
    };
    let here = std::thread::current().id();
    let there = std::thread::spawn(|| std::thread::current().id())
        .join()
        .expect("thread");
    let mut ledger = Ledger {
        acks: vec![ack(here), ack(there), ack(here)],
        ..Ledger::default()
    };
    assert_eq!(ledger.take_acks(Some(here)).len(), 2);
    assert!(!ledger.owes(here));
    assert!(ledger.owes(there));
    assert_eq!(ledger.take_acks(None).len(), 1);
    assert!(ledger.acks.is_empty());
}

/// A flush sends the acknowledgements its grace has passed; a younger one
/// waits for its thread's fetch, and the flush after says when.
#[test]
fn a_flush_takes_only_the_acknowledgements_older_than_its_grace() {
    let grace = Duration::from_millis(2);
    let now = Instant::now();
    let ack = |age: Duration| Ack {
        queue: "q".into(),
        job: b"j".to_vec(),
        digest: Digest::of(b"j"),
        thread: std::thread::current().id(),
        at: now - age,
    };
    let young = Duration::from_micros(500);
    let mut ledger = Ledger {
        acks: vec![ack(grace), ack(young), ack(Duration::from_millis(5))],
        ..Ledger::default()
    };
    let (aged, next) = ledger.take_aged(now, grace);
    assert_eq!(aged.len(), 2);
    assert_eq!(ledger.acks.len(), 1);
    assert_eq!(next, Some(now - young + grace));
    let (aged, next) = ledger.take_aged(now + grace, grace);
    assert_eq!((aged.len(), next), (1, None));
    assert!(ledger.acks.is_empty());
}

#[test]
fn forget_removes_one_copy() {
    let mut ledger = Ledger::default();
    let d = Digest::of(b"x");
    ledger.hold("q", b"x");
    ledger.hold("q", b"x");
    ledger.forget("q", &d);
    assert_eq!(ledger.held_count("q"), 1);
    ledger.forget("q", &d);
    assert_eq!(ledger.queues().count(), 0);
}

#[test]
fn the_jobs_finished_lately_stay_within_their_bound_and_share_the_queue_name() {
    let mut ledger = Ledger::default();
    for n in 0..FINISHED_MAX + 1_000 {
        ledger.finished("q", Digest::of(n.to_string().as_bytes()));
    }
    ledger.finished("other", Digest::of(b"last"));
    let finished = &ledger.finished;
    assert_eq!(finished.len, FINISHED_MAX);
    assert_eq!(finished.newest_first().count(), FINISHED_MAX);
    // Blocks enough for the bound, and one partly gone.
    assert!(finished.blocks.len() <= FINISHED_MAX / Block::<Entry>::CAPACITY + 2);
    assert_eq!(std::mem::size_of::<Entry>(), 16);
    // One name per run of a queue: the run of "q" that the bound cut, and "other".
    assert_eq!(finished.runs.len(), 2);
    let names: Vec<&str> = finished.newest_first().map(|(q, _)| q).collect();
    assert_eq!(names[0], "other");
    assert!(names[1..].iter().all(|q| *q == "q"));
    let args = ledger.reconcile_args(true);
    // No job held; two queues finished lately, the newest first in each.
    assert_eq!(args[0], b"0");
    assert_eq!(args[1], b"2");
    assert_eq!(args[2], b"other");
    assert_eq!(args[4], Digest::of(b"last").hex().as_bytes()[..24]);
    let q = args.iter().position(|a| a == b"q").map(|at| at + 1);
    assert_eq!(
        q.map(|at| args[at].clone()),
        Some((FINISHED_MAX - 1).to_string().into_bytes())
    );
    let newest = (FINISHED_MAX + 999).to_string();
    assert_eq!(
        q.map(|at| args[at + 1].clone()),
        Some(Digest::of(newest.as_bytes()).hex().as_bytes()[..24].to_vec())
    );
}

#[test]
fn each_job_finished_lately_keeps_its_queue_across_runs() {
    let queue = |n: usize| ["a", "b", "c"][(n / 3 + n / 7) % 3];
    let mut ledger = Ledger::default();
    let pushed = FINISHED_MAX + 5_000;
    for n in 0..pushed {
        ledger.finished(queue(n), Digest::of(n.to_string().as_bytes()));
    }
    let kept: Vec<(&str, Prefix)> = ledger
        .finished
        .newest_first()
        .map(|(q, p)| (q, *p))
        .collect();
    let expected: Vec<(&str, Prefix)> = (pushed - FINISHED_MAX..pushed)
        .rev()
        .map(|n| (queue(n), Digest::of(n.to_string().as_bytes()).prefix()))
        .collect();
    assert!(kept == expected);
    assert!(ledger.finished.runs.len() <= FINISHED_MAX);
}

#[test]
fn the_jobs_finished_lately_go_after_their_period_and_give_their_blocks_back() {
    let mut ledger = Ledger::default();
    for n in 0..Block::<Entry>::CAPACITY + 10 {
        ledger.finished("q", Digest::of(n.to_string().as_bytes()));
    }
    assert_eq!(ledger.finished.blocks.len(), 2);
    // Pushed FINISHED_FOR and 2 s ago, as far as the entries' seconds tell.
    let epoch = ledger.finished.epoch.expect("an epoch");
    ledger.finished.epoch = epoch.checked_sub(FINISHED_FOR + Duration::from_secs(2));
    ledger.finished("other", Digest::of(b"now"));
    let finished = &ledger.finished;
    assert_eq!(finished.len, 1);
    // The blocks of the entries gone are given back.
    assert_eq!(finished.blocks.len(), 1);
    let kept: Vec<(&str, Prefix)> = finished.newest_first().map(|(q, p)| (q, *p)).collect();
    assert!(kept == vec![("other", Digest::of(b"now").prefix())]);
    assert_eq!(finished.runs.len(), 1);
}
