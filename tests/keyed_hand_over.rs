//! The keyed hand-over (src/capsule/hand_over/keyed.rs), against a real
//! Redis: a processor's next job whose job limits differ from the finished
//! job's (a key of its own per job) is taken in two round trips of plain
//! commands, its slots booked first and checked after; a limit that the
//! count says is full, parked jobs, a stored limit, or limits the core does
//! not read send it to the script, which decides as a fetch would. Many
//! processors on few keys never run more than a key's limit at once.

mod support;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use limit_fetch_core::{keys, Capsule, Fetched, Interrupt};
use redis::Commands;
use support::proxy::Proxy;
use support::{
    capsule, capsule_whose_acks_ride, capsule_whose_acks_ride_through, expire, holding_the_second,
    jid_of, next, push_jobs, queue, redis,
};

/// Redis's command counts are the server's: one test at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn turn() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// How many times Redis ran `command` (lowercase).
fn calls(command: &str) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut redis())
        .unwrap();
    let prefix = format!("cmdstat_{command}:calls=");
    info.lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |n| n.parse().unwrap())
}

/// A job of queue `q` carrying job limits `limits` (as the middleware
/// writes them, inside the array).
fn job(q: &str, jid: &str, limits: &str) -> String {
    format!(
        r#"{{"limit_fetch":[{limits}],"queue":"{q}","class":"Keyed","args":[1],"jid":"{jid}"}}"#
    )
}

/// A job of a key of its own, `key:Keyed#<jid>`, of `concurrency`.
fn keyed(q: &str, jid: &str, concurrency: u64) -> String {
    job(
        q,
        jid,
        &format!(r#"{{"id":"{}","concurrency":{concurrency}}}"#, key(q, jid)),
    )
}

fn key(q: &str, jid: &str) -> String {
    format!("key:Keyed#{q}-{jid}")
}

fn jid(fetched: &Fetched) -> String {
    jid_of(&String::from_utf8_lossy(&fetched.job))
}

fn len(key: &str) -> usize {
    redis().llen(key).unwrap()
}

fn jids(key: &str) -> Vec<String> {
    let jobs: Vec<String> = redis().lrange(key, 0, -1).unwrap();
    jobs.iter().map(|j| jid_of(j)).collect()
}

/// Each next job, of a key of its own, is taken in two round trips without
/// the script, and counts once: its key's slot booked, the finished one's
/// freed, one slot of the queue.
#[test]
fn a_job_with_a_key_of_its_own_is_taken_in_two_round_trips() {
    let _turn = turn();
    let q = queue("own");
    let jobs: Vec<String> = (0..7).map(|i| keyed(&q, &format!("k{i}"), 1)).collect();
    push_jobs(&q, &jobs);
    let (c, mut held) = holding_the_second(&q);
    let (fcalls, trips, hand_overs) = (calls("fcall"), c.round_trips(), c.hand_overs());
    for i in 2..7 {
        held = next(&c, &q, held);
        assert_eq!(jid(held.as_ref().expect("a job")), format!("k{i}"));
        assert_eq!(len(&keys::job_busy(&key(&q, &format!("k{i}")))), 1);
        assert_eq!(len(&keys::job_busy(&key(&q, &format!("k{}", i - 1)))), 0);
        assert_eq!(len(&keys::busy(&q)), 1);
        assert_eq!(len(&keys::in_progress(c.uuid(), &q)), 1);
    }
    assert_eq!(calls("fcall"), fcalls, "no script");
    assert_eq!(c.hand_overs() - hand_overs, 5);
    assert_eq!(c.round_trips() - trips, 10);
    assert!(next(&c, &q, held).is_none());
    assert_eq!(len(&keys::job_busy(&key(&q, "k6"))), 0);
    assert_eq!(len(&keys::busy(&q)), 0);
    assert_eq!(len(&keys::in_progress(c.uuid(), &q)), 0);
}

/// The next job's key full by another capsule's booking, made between the
/// round trips: the count after the push is over the limit, and the script
/// parks the job (its push undone) and takes the next.
#[test]
fn a_key_full_by_another_booking_sends_the_job_to_the_script_which_parks_it() {
    let _turn = turn();
    let q = queue("full");
    push_jobs(
        &q,
        &[
            keyed(&q, "j", 1),
            keyed(&q, "k0", 1),
            keyed(&q, "k1", 1),
            keyed(&q, "k2", 1),
        ],
    );
    let (c, held) = holding_the_second(&q);
    let _: () = redis()
        .rpush(keys::job_busy(&key(&q, "k1")), "another")
        .unwrap();
    let fcalls = calls("fcall");
    let taken = next(&c, &q, held).expect("k2");
    assert_eq!(jid(&taken), "k2");
    assert_eq!(calls("fcall") - fcalls, 1);
    assert_eq!(jids(&keys::parked(&key(&q, "k1"))), ["k1"]);
    let busy: Vec<String> = redis()
        .lrange(keys::job_busy(&key(&q, "k1")), 0, -1)
        .unwrap();
    assert_eq!(busy, ["another"], "nothing over the limit, nothing left");
    assert_eq!(len(&keys::job_busy(&key(&q, "k0"))), 0);
    assert_eq!(len(&keys::job_busy(&key(&q, "k2"))), 1);
    assert_eq!(len(&keys::busy(&q)), 1);
    assert_eq!(jids(&keys::in_progress(c.uuid(), &q)), ["k2"]);
}

/// A key with parked jobs (another capsule runs one, the next waits): a
/// younger job of it goes behind them, not ahead; also where the key has
/// room since (its limit raised by hand, which sends none back): the
/// oldest parked job goes first.
#[test]
fn parked_jobs_of_the_next_key_are_not_overtaken() {
    let _turn = turn();
    let q = queue("overtake");
    let id = format!("key:B#{q}");
    let b = |jid: &str| job(&q, jid, &format!(r#"{{"id":"{id}","concurrency":1}}"#));
    push_jobs(
        &q,
        &[keyed(&q, "j", 1), keyed(&q, "a0", 1), b("b0"), b("b1")],
    );
    let (c, held) = holding_the_second(&q);
    // Another capsule runs b0 and parks b1.
    let other = capsule();
    let b0 = other.fetch(&[q.as_str()], &Interrupt::new()).unwrap();
    assert_eq!(jid(&b0.expect("b0")), "b0");
    assert!(other
        .fetch(&[q.as_str()], &Interrupt::new())
        .unwrap()
        .is_none());
    assert_eq!(jids(&keys::parked(&id)), ["b1"]);
    push_jobs(&q, &[b("b2")]);
    assert!(next(&c, &q, held).is_none());
    assert_eq!(jids(&keys::parked(&id)), ["b2", "b1"], "b1 first");
    assert_eq!(len(&keys::job_busy(&id)), 1);
    assert_eq!(len(&keys::in_progress(c.uuid(), &q)), 0);
    // Room for one more, with b1 and b2 parked: b3 queued behind them.
    let _: () = redis().set(keys::job_limit(&id), 2).unwrap();
    push_jobs(&q, &[keyed(&q, "a2", 1), keyed(&q, "a3", 1), b("b3")]);
    let held = next(&c, &q, None);
    assert_eq!(jid(held.as_ref().expect("a2")), "a2");
    let held = next(&c, &q, held);
    assert_eq!(jid(held.as_ref().expect("a3")), "a3");
    let taken = next(&c, &q, held).expect("b1");
    assert_eq!(jid(&taken), "b1", "the oldest parked goes first");
    assert_eq!(len(&keys::job_busy(&id)), 2);
}

/// A limit stored at run time lower than the job's declared concurrency
/// holds: the count within the declared one but over the stored one sends
/// the job to the script, which parks it.
#[test]
fn a_stored_limit_lower_than_the_declared_concurrency_holds() {
    let _turn = turn();
    let q = queue("stored");
    push_jobs(
        &q,
        &[keyed(&q, "j", 1), keyed(&q, "k0", 1), keyed(&q, "k1", 3)],
    );
    let (c, held) = holding_the_second(&q);
    let id = key(&q, "k1");
    let _: () = redis().set(keys::job_limit(&id), 1).unwrap();
    let _: () = redis().rpush(keys::job_busy(&id), "another").unwrap();
    assert!(next(&c, &q, held).is_none());
    assert_eq!(jids(&keys::parked(&id)), ["k1"]);
    assert_eq!(len(&keys::job_busy(&id)), 1);
    assert_eq!(len(&keys::busy(&q)), 0);
}

/// Limits the core does not read (a rate, a fair class's share) go to the
/// script after the first round trip; a discarding limit found full is
/// discarded by it.
#[test]
fn rated_fair_and_full_discarding_limits_go_to_the_script() {
    let _turn = turn();
    let q = queue("script");
    let rated = job(
        &q,
        "rated",
        &format!(r#"{{"id":"key:R#{q}","concurrency":2,"rate":[5,1]}}"#),
    );
    let fair = job(
        &q,
        "fair",
        &format!(
            r#"{{"id":"key:F#{q}-t","fair":"class:F-{q}"}},{{"id":"class:F-{q}","concurrency":4}}"#
        ),
    );
    let discarding = job(
        &q,
        "discarding",
        &format!(r#"{{"id":"key:D#{q}","concurrency":1,"discard":true}}"#),
    );
    push_jobs(
        &q,
        &[
            keyed(&q, "j", 1),
            keyed(&q, "k0", 1),
            rated,
            keyed(&q, "k2", 1),
            fair,
            discarding,
        ],
    );
    let (c, mut held) = holding_the_second(&q);
    let _: () = redis()
        .rpush(keys::job_busy(&format!("key:D#{q}")), "another")
        .unwrap();
    // After k0, a hand-over is tried; after the rated job (its limits not
    // read), the script alone fetches.
    for (want, tried) in [("rated", 1), ("k2", 0), ("fair", 1)] {
        let fcalls = calls("fcall");
        let before = c.hand_overs();
        held = next(&c, &q, held);
        assert_eq!(jid(held.as_ref().expect("a job")), want);
        assert_eq!(calls("fcall") - fcalls, 1, "{want}: the script");
        assert_eq!(c.hand_overs() - before, tried, "{want}");
    }
    assert_eq!(len(&keys::job_busy(&format!("key:R#{q}"))), 0);
    assert_eq!(len(&keys::job_busy(&format!("class:F-{q}"))), 1);
    assert!(next(&c, &q, held).is_none());
    let discarded = c.take_discarded();
    assert_eq!(discarded.len(), 1);
    assert_eq!(discarded[0].limit, format!("key:D#{q}"));
    assert_eq!(
        len(&keys::job_busy(&format!("key:D#{q}"))),
        1,
        "another's only"
    );
    assert_eq!(len(&keys::queue(&q)), 0);
}

/// A capsule that dies between the round trips leaves its finished job in
/// its in-progress list with the job the first moved (the acknowledgement
/// waits for the second): a reap finds the finished job's slot by it, and
/// frees it. Built by hand as the first round trip leaves it.
#[test]
fn a_reap_between_the_round_trips_frees_the_slot() {
    let _turn = turn();
    let q = queue("reaped");
    push_jobs(
        &q,
        &[keyed(&q, "j", 1), keyed(&q, "k0", 1), keyed(&q, "k1", 1)],
    );
    let (c, held) = holding_the_second(&q);
    assert_eq!(jid(held.as_ref().unwrap()), "k0");
    let mut conn = redis();
    let _: () = redis::cmd("LMOVE")
        .arg(keys::queue(&q))
        .arg(keys::in_progress(c.uuid(), &q))
        .arg("RIGHT")
        .arg("LEFT")
        .query(&mut conn)
        .unwrap();
    expire(c.uuid());
    let reaper = capsule();
    reaper.register(&Interrupt::new()).unwrap();
    reaper.beat(&Interrupt::new()).unwrap();
    assert_eq!(len(&keys::job_busy(&key(&q, "k0"))), 0, "k0's slot freed");
    assert_eq!(len(&keys::busy(&q)), 0);
    assert_eq!(jids(&keys::queue(&q)), ["k1", "k0"], "both back, k0 first");
}

/// A capsule without its heartbeat key may have been reaped while alive:
/// the reaper freed its slots and took its jobs back, and another of its
/// processors may have booked a slot of the same key since. The hand-over
/// then frees no slot itself: the script acknowledges, and frees only the
/// slots of a job still in progress.
#[test]
fn a_capsule_without_its_heartbeat_frees_no_slot_twice() {
    let _turn = turn();
    let q = queue("no-heartbeat");
    push_jobs(
        &q,
        &[keyed(&q, "j", 1), keyed(&q, "k0", 1), keyed(&q, "k1", 1)],
    );
    let (c, held) = holding_the_second(&q);
    assert_eq!(jid(held.as_ref().unwrap()), "k0");
    // What the reap left: k0 out of the in-progress list, its slot freed;
    // then another processor's booking of the same key.
    let mut conn = redis();
    let _: () = conn.del(keys::heartbeat(c.uuid())).unwrap();
    let k0 = held.as_ref().unwrap().job.clone();
    let _: () = conn.lrem(keys::in_progress(c.uuid(), &q), 1, &k0).unwrap();
    let busy: Vec<String> = conn.lrange(keys::job_busy(&key(&q, "k0")), 0, -1).unwrap();
    assert_eq!(busy, [c.uuid()]);
    let fcalls = calls("fcall");
    let taken = next(&c, &q, held).expect("k1");
    assert_eq!(jid(&taken), "k1");
    assert_eq!(calls("fcall") - fcalls, 1, "the script decided");
    assert_eq!(
        len(&keys::job_busy(&key(&q, "k0"))),
        1,
        "the other booking kept"
    );
}

/// A capsule frozen between the round trips, reaped meanwhile (its slots
/// freed, its jobs back in their queue), then woken: another of its
/// processors books a slot of the finished job's key before the second
/// round trip lands. That booking is the capsule's entry on the key's busy
/// list, as the finished job's was: the second round trip frees no slot
/// (the reaper freed the finished job's), nor acknowledges, and the key
/// counts every job of it the capsule runs.
#[test]
fn a_reap_between_the_round_trips_then_a_booking_of_the_key_is_not_freed_by_the_second() {
    let _turn = turn();
    let q = queue("reaped-between");
    let id = format!("key:Shared#{q}");
    let shared = |jid: &str| job(&q, jid, &format!(r#"{{"id":"{id}","concurrency":2}}"#));
    push_jobs(&q, &[keyed(&q, "j", 1), shared("a"), keyed(&q, "m", 1)]);
    let capsule_slot: Arc<Mutex<Option<Arc<Capsule>>>> = Arc::default();
    let seen: Arc<Mutex<Option<(String, usize)>>> = Arc::default();
    let meanwhile = {
        let (capsule_slot, seen, q, shared_x) =
            (capsule_slot.clone(), seen.clone(), q.clone(), shared("x"));
        let id = id.clone();
        Box::new(move || {
            let c = capsule_slot.lock().unwrap().clone().unwrap();
            expire(c.uuid());
            let reaper = capsule();
            reaper.register(&Interrupt::new()).unwrap();
            reaper.beat(&Interrupt::new()).unwrap();
            assert_eq!(len(&keys::job_busy(&id)), 0, "the reaper freed a's slot");
            // Another processor of the woken capsule takes x, of the key.
            let _: () = redis().rpush(keys::queue(&q), &shared_x).unwrap();
            let (fetcher_q, fetcher_c) = (q.clone(), c.clone());
            let x = std::thread::spawn(move || {
                fetcher_c
                    .fetch(&[fetcher_q.as_str()], &Interrupt::new())
                    .unwrap()
            })
            .join()
            .unwrap();
            *seen.lock().unwrap() = Some((jid(&x.expect("x")), len(&keys::job_busy(&id))));
        }) as Box<dyn FnOnce() + Send>
    };
    let round_two = vec![b"LREM".to_vec(), keys::job_busy(&id).into_bytes()];
    let proxy = Proxy::start(support::settings().port, round_two, meanwhile);
    let c = Arc::new(capsule_whose_acks_ride_through(proxy.port));
    *capsule_slot.lock().unwrap() = Some(c.clone());
    c.register(&Interrupt::new()).unwrap();
    let held = next(&c, &q, None);
    assert_eq!(jid(held.as_ref().expect("j")), "j");
    let held = next(&c, &q, held);
    assert_eq!(jid(held.as_ref().expect("a")), "a");
    let before = c.hand_overs();
    let taken = next(&c, &q, held);
    assert_eq!(c.hand_overs() - before, 1, "a keyed hand-over");
    let (x, booked) = seen
        .lock()
        .unwrap()
        .clone()
        .expect("held between the round trips");
    assert_eq!((x.as_str(), booked), ("x", 1));
    // The script took a, pushed back to the front by the reaper: with x,
    // the key is full, and another capsule's job of it waits.
    assert_eq!(jid(taken.as_ref().expect("a")), "a");
    assert_eq!(len(&keys::job_busy(&id)), 2, "x's and a's");
    push_jobs(&q, &[shared("y")]);
    let other = capsule();
    let m = other.fetch(&[q.as_str()], &Interrupt::new()).unwrap();
    assert_eq!(jid(&m.expect("m, pushed back")), "m");
    let y = other.fetch(&[q.as_str()], &Interrupt::new()).unwrap();
    assert!(y.is_none(), "y runs with x and a");
    assert_eq!(jids(&keys::parked(&id)), ["y"]);
}

/// A fetch interrupted while its first round trip waits (Redis paused):
/// the look, dropped, is finished on the runtime; its second round trip is
/// never sent, and the script, with the acknowledgement riding, decides as
/// of the first. The job it keeps goes back, every slot freed, nothing lost.
#[test]
fn an_interrupted_keyed_hand_over_loses_nothing_and_keeps_no_slot() {
    let _turn = turn();
    let q = queue("interrupted");
    push_jobs(
        &q,
        &[keyed(&q, "j", 1), keyed(&q, "k0", 1), keyed(&q, "k1", 1)],
    );
    let (c, held) = holding_the_second(&q);
    let k0 = held.expect("k0");
    c.acknowledge(&q, k0.job);
    let _: () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(1000)
        .arg("ALL")
        .query(&mut redis())
        .unwrap();
    let interrupt = Arc::new(Interrupt::new());
    let trigger = interrupt.clone();
    let waker = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(100));
        trigger.trigger();
    });
    let before = c.hand_overs();
    let outcome = c.fetch(&[q.as_str()], &interrupt);
    waker.join().unwrap();
    assert!(
        matches!(outcome, Err(limit_fetch_core::Error::Interrupted)),
        "{outcome:?}"
    );
    assert_eq!(c.hand_overs() - before, 1, "tried");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while jids(&keys::queue(&q)) != ["k1"] || len(&keys::in_progress(c.uuid(), &q)) > 0 {
        assert!(std::time::Instant::now() < deadline, "k1 not put back");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    for jid in ["k0", "k1"] {
        assert_eq!(len(&keys::job_busy(&key(&q, jid))), 0, "{jid}'s slot");
    }
    assert_eq!(len(&keys::busy(&q)), 0);
}

/// Capsules of several processors each, on a few keys of small limits, with
/// jobs whose key differs from the last: the most jobs of a key ever
/// running at once is its limit, every job runs once, and nothing is left.
#[test]
fn many_processors_on_few_keys_never_run_more_than_a_keys_limit() {
    let _turn = turn();
    let q = queue("proof");
    let (keys_n, limit, per_key) = (3, 2, 150);
    let jobs: Vec<String> = (0..per_key * keys_n)
        .map(|i| {
            let id = format!("key:Proof#{q}-{}", i % keys_n);
            job(
                &q,
                &format!("j{i}"),
                &format!(r#"{{"id":"{id}","concurrency":{limit}}}"#),
            )
        })
        .collect();
    // Pushed a few at a time, as they come: the queue stays short, and a
    // hand-over's next job is often of a key at its limit (a long queue
    // would be parked at once by the script).
    let producer = {
        let q = q.clone();
        std::thread::spawn(move || {
            for batch in jobs.chunks(keys_n) {
                push_jobs(&q, batch);
                std::thread::sleep(std::time::Duration::from_micros(400));
            }
        })
    };
    let running: Arc<Mutex<HashMap<String, (usize, usize)>>> = Arc::default();
    let done: Arc<Mutex<Vec<String>>> = Arc::default();
    let capsules: Vec<Arc<Capsule>> = (0..4)
        .map(|_| {
            let c = capsule_whose_acks_ride();
            c.register(&Interrupt::new()).unwrap();
            Arc::new(c)
        })
        .collect();
    let threads: Vec<_> = (0..12)
        .map(|t| {
            let (c, q) = (capsules[t % 4].clone(), q.clone());
            let (running, done) = (running.clone(), done.clone());
            std::thread::spawn(move || {
                let mut held: Option<Fetched> = None;
                let mut idle = 0;
                while idle < 20 {
                    held = next(&c, &q, held);
                    let Some(job) = held.as_ref() else {
                        idle += 1;
                        std::thread::sleep(std::time::Duration::from_millis(5));
                        continue;
                    };
                    idle = 0;
                    let text = String::from_utf8_lossy(&job.job).to_string();
                    let id = text.split('"').nth(5).unwrap().to_owned();
                    {
                        let mut running = running.lock().unwrap();
                        let (now, most) = running.entry(id.clone()).or_default();
                        *now += 1;
                        *most = (*most).max(*now);
                    }
                    std::thread::sleep(std::time::Duration::from_millis(1));
                    running.lock().unwrap().get_mut(&id).unwrap().0 -= 1;
                    done.lock().unwrap().push(jid_of(&text));
                }
            })
        })
        .collect();
    producer.join().unwrap();
    for t in threads {
        t.join().unwrap();
    }
    let running = running.lock().unwrap();
    for (id, (_, most)) in running.iter() {
        assert!(*most <= limit, "{id}: {most} running at once, over {limit}");
    }
    assert!(
        running.values().any(|(_, most)| *most == limit),
        "never full"
    );
    let mut done = done.lock().unwrap().clone();
    assert_eq!(done.len(), per_key * keys_n, "as many runs as jobs");
    done.sort();
    done.dedup();
    assert_eq!(done.len(), per_key * keys_n, "every job ran once");
    let hand_overs: u64 = capsules.iter().map(|c| c.hand_overs()).sum();
    assert!(hand_overs > 0, "no hand-over tried");
    for k in 0..keys_n {
        let id = format!("key:Proof#{q}-{k}");
        assert_eq!(len(&keys::job_busy(&id)), 0, "{id}");
        assert_eq!(len(&keys::parked(&id)), 0, "{id}");
    }
    assert_eq!(len(&keys::busy(&q)), 0);
}
