//! Every script survives Redis losing the gem's function library (a restart
//! with no persistence, `FUNCTION FLUSH`). A test binary of its own: the
//! flush costs other tests' fetches a round trip, which some of them count.

mod support;

use std::sync::{Barrier, Mutex};
use std::thread;

use limit_fetch_core::{Capsule, Interrupt};
use support::{capsule, push, queue, redis};

/// One test at a time: each flushes the library the other's capsules use.
static FLUSHING: Mutex<()> = Mutex::new(());

fn flush() {
    let _: () = redis::cmd("FUNCTION")
        .arg("FLUSH")
        .query(&mut redis())
        .unwrap();
}

/// `FUNCTION LOAD`'s calls since the last `CONFIG RESETSTAT`, and those that
/// failed (a load that found the library there).
fn loads() -> (u64, u64) {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut redis())
        .unwrap();
    let line = info
        .lines()
        .find_map(|line| line.strip_prefix("cmdstat_function|load:"))
        .unwrap_or("");
    let field = |name: &str| {
        line.split(',')
            .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
            .map_or(0, |v| v.parse().unwrap())
    };
    (field("calls"), field("failed_calls"))
}

#[test]
fn every_script_survives_a_function_flush() {
    let _one = FLUSHING.lock().unwrap_or_else(|e| e.into_inner());
    let q = queue("noscript-every");
    push(&q, 1);
    let a = capsule();
    let none = Interrupt::new();
    flush();
    // A capsule's first fetch goes through the runtime's connection.
    let fetched = a.fetch(&[q.as_str()], &none).unwrap().expect("a job");
    flush();
    a.requeue(vec![(q.clone(), fetched.job)], &none).unwrap();
    assert_eq!(a.limits().busy(&q, a.uuid(), &none).unwrap(), (0, 0));
    flush();
    a.beat(&none).unwrap();
    let fetched = a.fetch(&[q.as_str()], &none).unwrap().expect("a job");
    a.acknowledge(&q, fetched.job);
    flush();
    a.flush(&none).unwrap();
    flush();
    assert_eq!(a.deregister(&[q.as_str()], &none).unwrap(), 0);
}

/// Ten capsules that find the library lost at once (a restart with no
/// persistence) compile it once between them: every other load finds its
/// name taken, which is no error, and every fetch takes its job. Each
/// capsule fetches on a thread of its own: first on a new thread each round
/// (a thread's first fetch goes through the runtime's connection), then on
/// one thread round after round (through the thread's own). A round in
/// which fewer than two loads raced proves nothing: each way needs one that
/// did, within 10 rounds.
#[test]
fn capsules_that_find_the_library_lost_at_once_compile_it_once() {
    let _one = FLUSHING.lock().unwrap_or_else(|e| e.into_inner());
    let q = queue("noscript-race");
    let capsules: Vec<Capsule> = (0..10).map(|_| capsule()).collect();
    let fetch = |c: &Capsule| -> Result<(), String> {
        let none = Interrupt::new();
        let fetched = c.fetch(&[q.as_str()], &none).map_err(|e| e.to_string())?;
        let fetched = fetched.ok_or("no job")?;
        c.acknowledge(&q, fetched.job);
        c.flush(&none).map_err(|e| e.to_string())
    };
    let before = || {
        push(&q, capsules.len());
        flush();
        let _: () = redis::cmd("CONFIG")
            .arg("RESETSTAT")
            .query(&mut redis())
            .unwrap();
    };
    // Whether the round's loads raced (`loads`, read after it); every fetch
    // must have taken its job.
    let after = |way: &str, (calls, failed): (u64, u64), fetched: Vec<Result<(), String>>| {
        assert!(fetched.iter().all(Result::is_ok), "{way}: {fetched:?}");
        assert_eq!(
            calls - failed,
            1,
            "{way}: {calls} loads, {failed} found it there"
        );
        calls >= 2
    };

    let on_new_threads = (0..10).any(|_| {
        before();
        let start = Barrier::new(capsules.len());
        let fetched = thread::scope(|s| {
            let threads: Vec<_> = capsules
                .iter()
                .map(|c| {
                    let (start, fetch) = (&start, &fetch);
                    s.spawn(move || {
                        start.wait();
                        fetch(c)
                    })
                })
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        });
        after("the runtime's connection", loads(), fetched)
    });
    assert!(
        on_new_threads,
        "the runtime's connection: no two loads raced in 10 rounds"
    );

    let rounds = 11;
    let (start, end) = (Barrier::new(11), Barrier::new(11));
    let fetched = Mutex::new(Vec::new());
    // The assertions wait for the scope's end: a panic inside it would
    // leave the threads waiting on the barrier.
    let seen = thread::scope(|s| {
        for c in &capsules {
            let (start, end, fetch, fetched) = (&start, &end, &fetch, &fetched);
            s.spawn(move || {
                for _ in 0..rounds {
                    start.wait();
                    let result = fetch(c);
                    fetched.lock().unwrap().push(result);
                    end.wait();
                }
            });
        }
        (0..rounds)
            .map(|_| {
                before();
                start.wait();
                end.wait();
                (loads(), std::mem::take(&mut *fetched.lock().unwrap()))
            })
            .collect::<Vec<_>>()
    });
    // The first round is each thread's first fetch.
    let raced: Vec<bool> = seen
        .into_iter()
        .map(|(loads, fetched)| after("the threads' own connections", loads, fetched))
        .collect();
    let on_own_threads = raced[1..].iter().any(|&r| r);
    assert!(
        on_own_threads,
        "the threads' own connections: no two loads raced in 10 rounds"
    );
}
