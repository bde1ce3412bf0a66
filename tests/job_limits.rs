//! Job limits (a class's, a key's), against a real Redis, with no Ruby: the
//! fetch parks a job whose limit is full and takes the next, and every way a
//! slot frees sends the oldest parked job back to the front of its queue.

mod support;

use std::time::{Duration, Instant};

use limit_fetch_core::{keys, Capsule, CapsuleOptions, Fetched, Interrupt, Limits};
use redis::Commands;
use support::{capsule, capsule_whose_acks_ride, jid_of, push_jobs, queue, redis, settings};

/// Tests that beat take turns with each other and with tests of exact order:
/// a beat reaps any capsule whose heartbeat is missing, and its sweep sends
/// back parked jobs of any limit with room, even while a release is on its
/// way (the fetch then parks the extra job again, behind).
static BEATING: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn turn() -> std::sync::MutexGuard<'static, ()> {
    BEATING.lock().unwrap_or_else(|e| e.into_inner())
}

/// A job of `queue` as Sidekiq's client pushes it with the gem's client
/// middleware, carrying `limits` (id, default, discard) first, its queue
/// next.
fn job(queue: &str, jid: &str, limits: &[(&str, u64, bool)]) -> String {
    format!(
        r#"{{"limit_fetch":{},"queue":"{queue}","class":"SyncJob","args":[1],"jid":"{jid}"}}"#,
        limits_field(limits)
    )
}

fn limits_field(limits: &[(&str, u64, bool)]) -> String {
    let limits: Vec<String> = limits
        .iter()
        .map(|(id, concurrency, discard)| {
            let discard = if *discard { r#","discard":true"# } else { "" };
            format!(r#"{{"id":"{id}","concurrency":{concurrency}{discard}}}"#)
        })
        .collect();
    format!("[{}]", limits.join(","))
}

/// A fresh queue and key with two jobs of that key (limit 1), `<label>1`
/// and `<label>2`, in push order.
fn two_jobs_of_one_key(label: &str) -> (String, String) {
    let (q, k) = (queue(label), id(label));
    let jobs = [1, 2].map(|n| job(&q, &format!("{label}{n}"), &[(&k, 1, false)]));
    push_jobs(&q, &jobs);
    (q, k)
}

fn jid(fetched: &Fetched) -> String {
    jid_of(&String::from_utf8_lossy(&fetched.job))
}

fn fetch(capsule: &Capsule, queues: &[&str]) -> Option<String> {
    capsule
        .fetch(queues, &Interrupt::new())
        .unwrap()
        .map(|f| jid(&f))
}

fn fetch_job(capsule: &Capsule, queues: &[&str]) -> Fetched {
    capsule
        .fetch(queues, &Interrupt::new())
        .unwrap()
        .expect("a job")
}

fn parked(id: &str) -> i64 {
    redis().llen(keys::parked(id)).unwrap()
}

fn running(id: &str) -> i64 {
    redis().llen(keys::job_busy(id)).unwrap()
}

/// A job limit id no other test uses.
fn id(label: &str) -> String {
    format!("key:SyncJob#{label}-{}", uuid::Uuid::new_v4())
}

#[test]
fn a_full_key_parks_its_job_and_the_fetch_takes_the_next_then_a_finished_job_sends_it_back_first() {
    let _turn = turn();
    let q = queue("keyed");
    let (k1, k2) = (id("k1"), id("k2"));
    push_jobs(
        &q,
        &[
            job(&q, "a1", &[(&k1, 1, false)]),
            job(&q, "a2", &[(&k1, 1, false)]),
            job(&q, "b1", &[(&k2, 1, false)]),
            job(&q, "plain", &[]),
        ],
    );
    let c = capsule();
    let first = fetch_job(&c, &[&q]);
    assert_eq!(jid(&first), "a1");
    assert_eq!(
        fetch(&c, &[&q]).as_deref(),
        Some("b1"),
        "a2 parked, b1 next"
    );
    assert_eq!((parked(&k1), running(&k1), running(&k2)), (1, 1, 1));
    let members: Vec<String> = redis().smembers(keys::LIMITS_WITH_PARKED).unwrap();
    assert!(members.contains(&k1));
    // a1 ends: its acknowledgement, riding on the next fetch, sends a2 back
    // to the front of the queue, ahead of the job that was next.
    c.acknowledge(&q, first.job);
    assert_eq!(fetch(&c, &[&q]).as_deref(), Some("a2"));
    assert_eq!((parked(&k1), running(&k1)), (0, 1));
    let members: Vec<String> = redis().smembers(keys::LIMITS_WITH_PARKED).unwrap();
    assert!(!members.contains(&k1), "no parked jobs, no entry");
    assert_eq!(fetch(&c, &[&q]).as_deref(), Some("plain"));
    assert_eq!(fetch(&c, &[&q]), None);
}

/// The writes Redis reports on `keys` (keyspace notifications) while `f`
/// runs: what would wake a fetcher sleeping on them.
fn writes_to<F: FnOnce()>(keys: &[String], f: F) -> Vec<String> {
    let mut conn = redis();
    let _: () = redis::cmd("CONFIG")
        .arg(&["SET", "notify-keyspace-events", "Kl"])
        .query(&mut conn)
        .unwrap();
    let mut pubsub = conn.as_pubsub();
    for key in keys {
        pubsub.psubscribe(format!("__keyspace@*__:{key}")).unwrap();
    }
    pubsub
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    f();
    let mut events = Vec::new();
    while let Ok(message) = pubsub.get_message() {
        events.push(message.get_payload::<String>().unwrap());
    }
    events
}

#[test]
fn a_parked_job_that_the_acknowledging_fetch_takes_never_touches_its_queue() {
    let _turn = turn();
    let (q, k) = two_jobs_of_one_key("held");
    let other = queue("held-other");
    let c = capsule_whose_acks_ride();
    let first = fetch_job(&c, &[&q]);
    assert_eq!(fetch(&c, &[&q]), None, "held2 parked");
    assert_eq!(parked(&k), 1);
    // Taken by the fetch its release rides on: the queue's key is not
    // written, so no fetcher sleeping on it wakes for nothing, and the
    // key's slot passes from the first job to it without a write.
    c.acknowledge(&q, first.job);
    let mut second = None;
    let watched = [keys::queue(&q), keys::job_busy(&k)];
    let events = writes_to(&watched, || second = Some(fetch_job(&c, &[&q])));
    assert_eq!(second.as_ref().map(jid).as_deref(), Some("held2"));
    assert_eq!(events, Vec::<String>::new());
    // Released by a fetch from other queues: pushed to the front of its own.
    push_jobs(&q, &[job(&q, "held3", &[(&k, 1, false)])]);
    assert_eq!(fetch(&c, &[&q]), None, "held3 parked");
    c.acknowledge(&q, second.unwrap().job);
    assert_eq!(fetch(&c, &[&other]), None);
    assert_eq!((parked(&k), running(&k)), (0, 0));
    assert_eq!(fetch(&c, &[&q]).as_deref(), Some("held3"));
}

#[test]
fn limits_are_read_first_in_a_payload_or_anywhere_at_its_top_level_never_in_its_arguments() {
    let _turn = turn();
    let q = queue("where");
    // An id with brackets: its array, first in the payload, does not
    // decode alone, and the whole payload is.
    let bracketed = format!("{}]x[", id("bracket"));
    // Written last, as by a client without the middleware's ordering.
    let last = id("last");
    let inner = id("inner");
    let hidden = format!(
        r#"{{"limit_fetch":{}}}"#,
        limits_field(&[(&inner, 0, false)])
    );
    push_jobs(
        &q,
        &[
            job(&q, "b1", &[(&bracketed, 1, false)]),
            job(&q, "b2", &[(&bracketed, 1, false)]),
            format!(
                r#"{{"class":"SyncJob","args":[1],"queue":"{q}","jid":"l1","limit_fetch":{}}}"#,
                limits_field(&[(&last, 1, false)])
            ),
            format!(
                r#"{{"class":"SyncJob","args":[1],"queue":"{q}","jid":"l2","limit_fetch":{}}}"#,
                limits_field(&[(&last, 1, false)])
            ),
            // A hash among the arguments with a limit_fetch key: data, not
            // the job's limits (0 would park it for good).
            format!(r#"{{"class":"SyncJob","args":[{hidden}],"queue":"{q}","jid":"h1"}}"#),
            format!(
                r#"{{"limit_fetch":{},"class":"SyncJob","args":[{hidden}],"queue":"{q}","jid":"h2"}}"#,
                limits_field(&[(&last, 1, false)])
            ),
        ],
    );
    let c = capsule();
    let taken: Vec<Option<String>> = (0..4).map(|_| fetch(&c, &[&q])).collect();
    let taken: Vec<Option<&str>> = taken.iter().map(Option::as_deref).collect();
    assert_eq!(
        taken,
        [Some("b1"), Some("l1"), Some("h1"), None],
        "b2, l2 and h2 parked"
    );
    assert_eq!(
        (parked(&bracketed), parked(&last), parked(&inner)),
        (1, 2, 0)
    );
    assert_eq!(
        (running(&bracketed), running(&last), running(&inner)),
        (1, 1, 0)
    );
}

/// A released job goes back to the queue its payload names: read after its
/// limits where the middleware writes it, from the whole payload where it
/// is elsewhere or JSON escapes its name.
#[test]
fn a_released_job_goes_back_to_the_queue_its_payload_names_however_it_is_written() {
    let _turn = turn();
    let q = queue("named");
    let k = id("named");
    let next = queue("next");
    let escaped = format!(r#"{}\"\\x"#, queue("esc")); // JSON for: "\x after the name
    let later = queue("later");
    let field = limits_field(&[(&k, 1, false)]);
    push_jobs(
        &q,
        &[
            job(&q, "n0", &[(&k, 1, false)]),
            job(&next, "n1", &[(&k, 1, false)]),
            job(&escaped, "n2", &[(&k, 1, false)]),
            format!(r#"{{"limit_fetch":{field},"class":"SyncJob","queue":"{later}","jid":"n3"}}"#),
        ],
    );
    let c = capsule();
    assert_eq!(fetch(&c, &[&q]).as_deref(), Some("n0"));
    assert_eq!(fetch(&c, &[&q]), None);
    assert_eq!(parked(&k), 3);
    let sent = Limits::new(&settings())
        .set_job_limit(&k, Some(4), &Interrupt::new())
        .unwrap();
    assert_eq!(sent, 3);
    let mut conn = redis();
    let unescaped = escaped.replace(r#"\""#, "\"").replace(r#"\\"#, "\\");
    for (name, jid) in [(&next, "n1"), (&unescaped, "n2"), (&later, "n3")] {
        let jobs: Vec<String> = conn.lrange(keys::queue(name), 0, -1).unwrap();
        assert_eq!(jobs.len(), 1, "{name}: {jobs:?}");
        assert!(
            jobs[0].contains(&format!(r#""jid":"{jid}""#)),
            "{name}: {jobs:?}"
        );
    }
}

#[test]
fn a_class_limit_holds_across_capsules_and_a_job_carrying_two_limits_books_both() {
    let _turn = turn();
    let q = queue("class");
    let class = format!("class:ExportJob-{}", uuid::Uuid::new_v4());
    let key = id("tenant");
    let jobs: Vec<String> = (0..5)
        .map(|i| {
            job(
                &q,
                &format!("e{i}"),
                &[(&class, 2, false), (&key, 5, false)],
            )
        })
        .collect();
    push_jobs(&q, &jobs);
    let (a, b) = (capsule(), capsule());
    a.register(&Interrupt::new()).unwrap();
    b.register(&Interrupt::new()).unwrap();
    assert_eq!(fetch(&a, &[&q]).as_deref(), Some("e0"));
    assert_eq!(fetch(&b, &[&q]).as_deref(), Some("e1"));
    assert_eq!(fetch(&a, &[&q]), None);
    assert_eq!(fetch(&b, &[&q]), None);
    assert_eq!((running(&class), running(&key), parked(&class)), (2, 2, 3));
    // Raised at run time: the parked jobs it has room for go back at once.
    let limits = Limits::new(&settings());
    let sent = limits
        .set_job_limit(&class, Some(4), &Interrupt::new())
        .unwrap();
    assert_eq!(sent, 2);
    assert_eq!(fetch(&b, &[&q]).as_deref(), Some("e2"), "oldest first");
    assert_eq!(fetch(&a, &[&q]).as_deref(), Some("e3"));
    assert_eq!(fetch(&a, &[&q]), None);
    let states = limits
        .job_limits(&[class.as_str(), key.as_str()], &Interrupt::new())
        .unwrap();
    assert_eq!(
        states
            .iter()
            .map(|s| (s.stored, s.running, s.parked))
            .collect::<Vec<_>>(),
        vec![(Some(4), 4, 1), (None, 4, 0)]
    );
    let active = limits.active_job_limits(&Interrupt::new()).unwrap();
    assert!(active.contains(&class) && active.contains(&key));
    // Paused: the parked job stays parked.
    limits
        .set_job_limit(&class, Some(0), &Interrupt::new())
        .unwrap();
    assert_eq!(parked(&class), 1);
    // Back to the jobs' default (2): still full.
    assert_eq!(
        limits
            .set_job_limit(&class, None, &Interrupt::new())
            .unwrap(),
        0
    );
    assert_eq!(fetch(&a, &[&q]), None);
    a.deregister(&[q.as_str()], &Interrupt::new()).unwrap();
    b.deregister(&[q.as_str()], &Interrupt::new()).unwrap();
    assert_eq!((running(&class), running(&key)), (0, 0));
}

#[test]
fn a_fetch_sets_aside_at_most_its_lookahead_per_look_and_looks_again_past_a_hot_key() {
    let q = queue("hot");
    let hot = id("hot");
    let mut jobs: Vec<String> = (0..10)
        .map(|i| job(&q, &format!("h{i}"), &[(&hot, 1, false)]))
        .collect();
    jobs.push(job(&q, "cold", &[(&id("cold"), 1, false)]));
    push_jobs(&q, &jobs);
    let c = Capsule::new(
        &settings(),
        CapsuleOptions {
            lookahead: 3,
            ..CapsuleOptions::default()
        },
    );
    assert_eq!(fetch(&c, &[&q]).as_deref(), Some("h0"));
    let trips = c.round_trips();
    assert_eq!(fetch(&c, &[&q]).as_deref(), Some("cold"));
    // Nine parked, three a look: three looks, and the fourth takes "cold".
    assert_eq!(c.round_trips() - trips, 4);
    assert_eq!(parked(&hot), 9);
}

/// A run of jobs whose limits are full is parked in bulk: each key's jobs in
/// their order, the run ending at the first job the fetch may take or must
/// discard, within the lookahead.
#[test]
fn a_hot_backlog_is_parked_in_bulk_in_order_up_to_the_first_job_it_may_take() {
    let _turn = turn();
    let q = queue("bulk");
    let (h1, h2, d) = (id("bulk-h1"), id("bulk-h2"), id("bulk-d"));
    let mut jobs = vec![
        job(&q, "a0", &[(&h1, 1, false)]),
        job(&q, "b0", &[(&h2, 1, false)]),
        job(&q, "d0", &[(&d, 1, true)]),
    ];
    for i in 1..=30 {
        jobs.push(job(&q, &format!("a{i}"), &[(&h1, 1, false)]));
        jobs.push(job(&q, &format!("b{i}"), &[(&h2, 1, false)]));
    }
    jobs.push(job(&q, "d1", &[(&d, 1, true)]));
    jobs.extend((31..=40).map(|i| job(&q, &format!("a{i}"), &[(&h1, 1, false)])));
    jobs.push(job(&q, "cold", &[]));
    push_jobs(&q, &jobs);
    let c = capsule();
    let taken: Vec<Option<String>> = (0..3).map(|_| fetch(&c, &[&q])).collect();
    assert_eq!(
        taken,
        [Some("a0"), Some("b0"), Some("d0")].map(|j| j.map(String::from))
    );
    // 60 parked, d1 discarded, 10 more parked: within the lookahead (100).
    let trips = c.round_trips();
    assert_eq!(fetch(&c, &[&q]).as_deref(), Some("cold"));
    assert_eq!(c.round_trips() - trips, 1);
    let oldest_first = |id: &str| -> Vec<String> {
        let jobs: Vec<String> = redis().lrange(keys::parked(id), 0, -1).unwrap();
        jobs.iter().rev().map(|j| jid_of(j)).collect()
    };
    let a: Vec<String> = (1..=40).map(|i| format!("a{i}")).collect();
    let b: Vec<String> = (1..=30).map(|i| format!("b{i}")).collect();
    assert_eq!((oldest_first(&h1), oldest_first(&h2)), (a, b));
    assert_eq!((parked(&d), running(&d)), (0, 1));
    let queued: i64 = redis().llen(keys::queue(&q)).unwrap();
    assert_eq!(queued, 0);
}

/// A run parked in bulk is read by its head, the text its limits open
/// with: a job that holds that text among its arguments, opening otherwise
/// (it carries no limit), is not of the run, and is taken.
#[test]
fn a_job_holding_a_hot_keys_head_in_its_arguments_is_not_parked_with_its_run() {
    let _turn = turn();
    let q = queue("head");
    let hot = id("head-hot");
    let mut jobs: Vec<String> = (0..20)
        .map(|i| job(&q, &format!("h{i}"), &[(&hot, 1, false)]))
        .collect();
    let head = format!(r#"{{"limit_fetch":{}"#, limits_field(&[(&hot, 1, false)]));
    jobs.push(format!(
        r#"{{"queue":"{q}","class":"SyncJob","args":[{head},"x":1}}],"jid":"cold"}}"#
    ));
    push_jobs(&q, &jobs);
    let c = capsule();
    assert_eq!(fetch(&c, &[&q]).as_deref(), Some("h0"));
    assert_eq!(fetch(&c, &[&q]).as_deref(), Some("cold"));
    let parked_jobs: Vec<String> = redis().lrange(keys::parked(&hot), 0, -1).unwrap();
    let oldest_first: Vec<String> = parked_jobs.iter().rev().map(|j| jid_of(j)).collect();
    let expected: Vec<String> = (1..20).map(|i| format!("h{i}")).collect();
    assert_eq!(oldest_first, expected);
}

#[test]
fn a_discarding_limit_drops_the_job_counts_it_and_hands_its_payload_over() {
    let q = queue("discard");
    let k = id("webhook");
    let duplicate = job(&q, "w2", &[(&k, 1, true)]);
    push_jobs(&q, &[job(&q, "w1", &[(&k, 1, true)]), duplicate.clone()]);
    let c = capsule();
    let before: i64 = redis().hget(keys::DISCARDED, "SyncJob").unwrap_or_default();
    let first = fetch_job(&c, &[&q]);
    assert_eq!(fetch(&c, &[&q]), None);
    let discarded = c.take_discarded();
    assert_eq!(discarded.len(), 1);
    // The whole payload, byte for byte: the app's handlers get nothing else.
    assert_eq!(discarded[0].job, duplicate.as_bytes());
    assert_eq!(discarded[0].limit, k);
    assert!(c.take_discarded().is_empty());
    let after: i64 = redis().hget(keys::DISCARDED, "SyncJob").unwrap();
    assert_eq!(after - before, 1);
    assert_eq!(
        (parked(&k), redis().llen::<_, i64>(keys::queue(&q)).unwrap()),
        (0, 0)
    );
    // A later one runs once the first has ended.
    c.acknowledge(&q, first.job);
    push_jobs(&q, &[job(&q, "w3", &[(&k, 1, true)])]);
    assert_eq!(fetch(&c, &[&q]).as_deref(), Some("w3"));
}

#[test]
fn requeue_frees_the_jobs_limits_and_sends_a_parked_job_back() {
    let _turn = turn();
    let (q, k) = two_jobs_of_one_key("r");
    let c = capsule();
    let first = fetch_job(&c, &[&q]);
    assert_eq!(fetch(&c, &[&q]), None);
    assert_eq!(parked(&k), 1);
    c.requeue(vec![(q.clone(), first.job)], &Interrupt::new())
        .unwrap();
    assert_eq!((running(&k), parked(&k)), (0, 0));
    let capsule_limits: i64 = redis().scard(keys::capsule_limits(c.uuid())).unwrap();
    assert_eq!(capsule_limits, 0);
    let mut got = vec![fetch(&c, &[&q]).unwrap()];
    assert_eq!(fetch(&c, &[&q]), None, "one at a time");
    assert_eq!(got, vec!["r2"], "the parked job went back first");
    c.acknowledge(&q, held_job(&c, &q, &got[0]));
    got.push(fetch(&c, &[&q]).unwrap());
    assert_eq!(got, vec!["r2", "r1"]);
}

/// The job `jid` that `c` holds, from its in-progress list.
fn held_job(c: &Capsule, q: &str, jid: &str) -> Vec<u8> {
    let jobs: Vec<Vec<u8>> = redis()
        .lrange(keys::in_progress(c.uuid(), q), 0, -1)
        .unwrap();
    jobs.into_iter()
        .find(|j| String::from_utf8_lossy(j).contains(&format!(r#""jid":"{jid}""#)))
        .expect("held")
}

/// Two registered capsules: one to die, one whose beat reaps it.
fn victim_and_survivor() -> (Capsule, Capsule) {
    let (victim, survivor) = (capsule(), capsule());
    victim.register(&Interrupt::new()).unwrap();
    survivor.register(&Interrupt::new()).unwrap();
    (victim, survivor)
}

#[test]
fn reaping_a_dead_capsule_frees_its_key_slots_and_sends_parked_jobs_back() {
    let _turn = turn();
    let (q, k) = two_jobs_of_one_key("d");
    let none = Interrupt::new();
    let (victim, survivor) = victim_and_survivor();
    assert_eq!(fetch(&victim, &[&q]).as_deref(), Some("d1"));
    assert_eq!(fetch(&survivor, &[&q]), None);
    assert_eq!(parked(&k), 1);
    support::expire(victim.uuid());
    let report = survivor.beat(&none).unwrap();
    let reaped = report
        .reaped
        .iter()
        .find(|r| r.uuid == victim.uuid())
        .expect("reaped");
    assert_eq!(reaped.requeued, 1);
    assert_eq!((running(&k), parked(&k)), (0, 0));
    let left: bool = redis().exists(keys::capsule_limits(victim.uuid())).unwrap();
    assert!(!left);
    // Both back, the dead capsule's job first: it had started.
    assert_eq!(fetch(&survivor, &[&q]).as_deref(), Some("d1"));
    assert_eq!(fetch(&survivor, &[&q]), None);
    assert_eq!(parked(&k), 1, "d2 parked again behind d1");
    survivor.deregister(&[q.as_str()], &none).unwrap();
    assert_eq!((running(&k), parked(&k)), (0, 0));
}

/// A run's hand-over passes the slots of the job it acknowledges before it
/// reads the next one, which may carry other limits: if the capsule dies
/// before its script decides, no job of its holds those slots, and the set
/// the pipeline named them in is how its reaper finds them.
#[test]
fn reaping_frees_the_slots_of_jobs_it_holds_and_of_limits_its_runs_named() {
    let _turn = turn();
    let (q, k) = two_jobs_of_one_key("n");
    let none = Interrupt::new();
    let (victim, survivor) = victim_and_survivor();
    assert_eq!(fetch(&victim, &[&q]).as_deref(), Some("n1"));
    assert!(!redis()
        .exists::<_, bool>(keys::capsule_limits(victim.uuid()))
        .unwrap());
    // As a run's pipeline leaves it, the job that took the slot unread.
    let passed = id("n-passed");
    let _: () = redis()
        .rpush(keys::job_busy(&passed), victim.uuid())
        .unwrap();
    let _: () = redis()
        .sadd(keys::capsule_limits(victim.uuid()), &passed)
        .unwrap();
    support::expire(victim.uuid());
    survivor.beat(&none).unwrap();
    assert_eq!((running(&k), running(&passed)), (0, 0));
    let left: bool = redis().exists(keys::capsule_limits(victim.uuid())).unwrap();
    assert!(!left);
    survivor.deregister(&[q.as_str()], &none).unwrap();
}

#[test]
fn a_beat_restores_a_lost_booking_and_sends_back_parked_jobs_with_room() {
    let _turn = turn();
    let (q, k) = two_jobs_of_one_key("h");
    let none = Interrupt::new();
    let c = capsule();
    c.register(&none).unwrap();
    let first = fetch_job(&c, &[&q]);
    assert_eq!(fetch(&c, &[&q]), None);
    // Lost to a Redis restart: the beat books it again.
    let _: () = redis().del(keys::job_busy(&k)).unwrap();
    let report = c.beat(&none).unwrap();
    assert!(report.corrected.contains(&(keys::job_busy(&k), 0, 1)));
    assert_eq!((running(&k), parked(&k)), (1, 1));
    // A slot freed with no release (a hand edit): a later beat's sweep, here
    // another capsule's (c's own would book its running job again), sends
    // the parked job back.
    let _: () = redis().del(keys::job_busy(&k)).unwrap();
    let _: () = redis().srem(keys::capsule_limits(c.uuid()), &k).unwrap();
    let _: () = redis().del(keys::in_progress(c.uuid(), &q)).unwrap();
    let d = capsule();
    d.register(&none).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut released = 0;
    while parked(&k) > 0 {
        assert!(Instant::now() < deadline, "never released");
        released += d.beat(&none).unwrap().released;
    }
    assert_eq!(released, 1);
    drop(first);
    c.deregister(&[q.as_str()], &none).unwrap();
    d.deregister(&[q.as_str()], &none).unwrap();
}

#[test]
fn keys_of_finished_jobs_leave_nothing_behind_in_redis() {
    let q = queue("idle");
    let ids: Vec<String> = (0..50).map(|i| id(&format!("idle{i}"))).collect();
    let jobs: Vec<String> = ids
        .iter()
        .enumerate()
        .flat_map(|(i, k)| [0, 1].map(|n| job(&q, &format!("{i}-{n}"), &[(k, 1, false)])))
        .collect();
    push_jobs(&q, &jobs);
    let c = capsule();
    let none = Interrupt::new();
    // As Sidekiq's capsules are: a hand-over's passed slots are freed only
    // while the capsule's heartbeat key exists.
    c.register(&none).unwrap();
    let mut done = 0;
    while done < jobs.len() {
        let fetched = c.fetch(&[q.as_str()], &none).unwrap().expect("a job");
        c.acknowledge(&q, fetched.job);
        done += 1;
    }
    c.flush(&none).unwrap();
    let mut conn = redis();
    for k in &ids {
        for key in [keys::job_busy(k), keys::parked(k), keys::job_limit(k)] {
            assert!(!conn.exists::<_, bool>(&key).unwrap(), "{key} left behind");
        }
    }
    let parked_ids: Vec<String> = conn.smembers(keys::LIMITS_WITH_PARKED).unwrap();
    assert!(ids.iter().all(|k| !parked_ids.contains(k)));
    // Each key's two jobs were a run, which named its limit in the
    // capsule's set (reap.lua) until the script that ended it.
    assert!(!conn
        .exists::<_, bool>(keys::capsule_limits(c.uuid()))
        .unwrap());
}

/// A parked job an acknowledgement sends back is held for its queue, not
/// yet pushed: a fetch over many queues, which skips empty ones in runs,
/// still finds it there.
#[test]
fn a_released_job_held_for_a_queue_far_down_a_long_list_is_taken() {
    let _turn = turn();
    let names: Vec<String> = (0..30).map(|i| queue(&format!("far {i}"))).collect();
    let far = &names[25];
    let k = id("far");
    push_jobs(
        far,
        &[
            job(far, "f1", &[(&k, 1, false)]),
            job(far, "f2", &[(&k, 1, false)]),
        ],
    );
    let c = capsule();
    let list: Vec<&str> = names.iter().map(String::as_str).collect();
    let first = fetch_job(&c, &list);
    assert_eq!(jid(&first), "f1");
    assert_eq!(fetch(&c, &list), None, "f2 parked");
    assert_eq!(parked(&k), 1);
    c.acknowledge(far, first.job);
    assert_eq!(fetch(&c, &list).as_deref(), Some("f2"));
    assert_eq!((parked(&k), running(&k)), (0, 1));
}
