//! Leased starts (src/capsule/hand_over/lease.rs, lua/lease.lua), against
//! a real Redis: a run of rated jobs is handed over without the fetch
//! script, its starts counted a grant at a time, each stamped at the end
//! of its lease's span; a lease is not spent past its span; and, over
//! random arrivals, job lengths and several capsules' threads, no window
//! of the period holds more starts than the rate's limit.

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use limit_fetch_core::{keys, Capsule, CapsuleOptions, ConnectionSettings, Fetched, Interrupt};
use redis::Commands;
use support::{capsule_whose_acks_ride, jid_of, next, push_jobs, queue, redis};

/// A job of queue `q` under class rate `id` of `limit` starts a `period`
/// (seconds), as the client middleware writes it.
fn rated(q: &str, jid: &str, id: &str, (limit, period): (u64, f64), discard: bool) -> String {
    let discard = if discard { r#","discard":true"# } else { "" };
    format!(
        r#"{{"limit_fetch":[{{"id":"{id}","rate":[{limit},{period}]{discard}}}],"queue":"{q}","class":"Rated","args":[],"jid":"{jid}"}}"#
    )
}

fn push_rated(q: &str, id: &str, rate: (u64, f64), from: usize, n: usize) {
    push_rated_or_discarded(q, id, rate, false, from, n);
}

fn push_rated_or_discarded(
    q: &str,
    id: &str,
    rate: (u64, f64),
    discard: bool,
    from: usize,
    n: usize,
) {
    let jobs: Vec<String> = (from..from + n)
        .map(|i| rated(q, &format!("j{i}"), id, rate, discard))
        .collect();
    push_jobs(q, &jobs);
}

fn processor() -> Capsule {
    let capsule = capsule_whose_acks_ride();
    capsule.register(&Interrupt::new()).unwrap();
    capsule
}

/// Redis's clock (microseconds).
fn redis_now(conn: &mut redis::Connection) -> u64 {
    let (secs, micros): (u64, u64) = redis::cmd("TIME").query(conn).unwrap();
    secs * 1_000_000 + micros
}

/// This host's clock, which Redis's TIME reads (microseconds).
fn clock() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// The starts counted in `id`'s window, (member, stamp).
fn counted(id: &str) -> Vec<(String, u64)> {
    let starts: Vec<(String, f64)> = redis()
        .zrange_withscores(keys::job_starts(id), 0, -1)
        .unwrap();
    starts.into_iter().map(|(m, at)| (m, at as u64)).collect()
}

/// A fetch that was a hand-over the script did not decide: one round trip,
/// a hand-over's.
fn next_counted(c: &Capsule, q: &str, held: Option<Fetched>) -> (Option<Fetched>, bool) {
    let (trips, hand_overs) = (c.round_trips(), c.hand_overs());
    let fetched = next(c, q, held);
    let alone = c.round_trips() - trips == 1 && c.hand_overs() - hand_overs == 1;
    (fetched, alone)
}

/// A rate that never binds: after the two fetches that start the run (the
/// script's), every job is handed over, its starts leased in grants of 1,
/// 2, 4... (fewer grants than jobs), each start stamped at its grant's
/// end, ahead of Redis's clock then; every job's start is counted.
#[test]
fn a_run_of_rated_jobs_is_handed_over_on_leased_starts() {
    let q = queue("leased");
    let id = format!("class:Leased-{q}");
    let rate = (1_000_000, 60.0);
    push_rated(&q, &id, rate, 0, 40);
    let c = processor();
    let mut conn = redis();
    let mut held = next(&c, &q, None);
    held = next(&c, &q, held);
    let mut handed = 0;
    for i in 2..40 {
        let before = redis_now(&mut conn);
        let (fetched, alone) = next_counted(&c, &q, held);
        let fetched = fetched.expect("a job");
        assert_eq!(
            jid_of(&String::from_utf8_lossy(&fetched.job)),
            format!("j{i}")
        );
        handed += usize::from(alone);
        held = Some(fetched);
        // A grant's stamps: ahead of Redis's clock when it was asked.
        let leased: Vec<u64> = counted(&id)
            .into_iter()
            .filter(|(m, _)| m.contains('#'))
            .map(|(_, at)| at)
            .collect();
        if let Some(newest) = leased.iter().max() {
            assert!(*newest > before || i > 2, "stamped ahead of its grant");
        }
    }
    assert!(handed >= 36, "{handed} of 38 handed over");
    let starts = counted(&id);
    let leased: Vec<&(String, u64)> = starts.iter().filter(|(m, _)| m.contains('#')).collect();
    let grants: std::collections::BTreeSet<u64> = leased.iter().map(|(_, at)| *at).collect();
    assert!(starts.len() >= 40, "every start counted: {}", starts.len());
    assert!(
        grants.len() * 3 <= leased.len(),
        "{} grants for {} leased starts",
        grants.len(),
        leased.len()
    );
}

/// A lease's stamps are ahead of Redis's clock by its span (a twentieth of
/// the period), and a thread does not spend it past that span: its next
/// hand-over, later, asks for a new grant (stamped anew).
#[test]
fn a_lease_is_stamped_at_its_span_and_not_spent_past_it() {
    let q = queue("span");
    let id = format!("class:Span-{q}");
    // A span of 10 ms.
    let rate = (1_000_000, 0.2);
    push_rated(&q, &id, rate, 0, 12);
    let c = processor();
    let mut conn = redis();
    let mut held = next(&c, &q, None);
    held = next(&c, &q, held);
    // Grants of 1, 2, 4: the last leaves starts to spend.
    for _ in 0..4 {
        held = next(&c, &q, held);
    }
    let now = redis_now(&mut conn);
    let newest = counted(&id).into_iter().map(|(_, at)| at).max().unwrap();
    assert!(
        newest > now,
        "a leased start is stamped ahead: {newest} <= {now}"
    );
    assert!(
        newest <= now + 10_000,
        "by its span at most: {}",
        newest - now
    );
    std::thread::sleep(Duration::from_millis(15));
    let later = redis_now(&mut conn);
    let (fetched, alone) = next_counted(&c, &q, held);
    assert!(fetched.is_some() && alone, "handed over");
    let newest = counted(&id).into_iter().map(|(_, at)| at).max().unwrap();
    assert!(newest > later, "a lease past its span was spent");
}

/// Starts a lease did not spend go back once its hand-over leaves a job
/// to the script (here: the next job is not of the run), in the script's
/// request: the window counts only the starts that happened.
#[test]
fn starts_a_lease_did_not_spend_are_given_back() {
    let q = queue("given-back");
    let id = format!("class:Back-{q}");
    push_rated(&q, &id, (1_000_000, 60.0), 0, 6);
    push_jobs(
        &q,
        &[format!(
            r#"{{"queue":"{q}","class":"Plain","args":[],"jid":"p"}}"#
        )],
    );
    let c = processor();
    let mut held = next(&c, &q, None);
    // j1 by the script; j2 on a grant of 1, j3 and j4 on one of 2, j5 on
    // one of 4, three left.
    for _ in 1..6 {
        held = next(&c, &q, held);
    }
    assert_eq!(counted(&id).len(), 9, "six started, three leased ahead");
    let plain = next(&c, &q, held).expect("the plain job");
    assert_eq!(jid_of(&String::from_utf8_lossy(&plain.job)), "p");
    assert_eq!(counted(&id).len(), 6, "the three unspent given back");
}

/// The leased starts counted in `id`'s window, as grants: (stamp, starts),
/// oldest first.
fn grants(id: &str) -> Vec<(u64, usize)> {
    let mut grants = std::collections::BTreeMap::new();
    for (member, at) in counted(id) {
        if member.contains('#') {
            *grants.entry(at).or_insert(0) += 1;
        }
    }
    grants.into_iter().collect()
}

/// A lease's span is as long as its starts take to spend (lua/prelude/
/// rates.lua's lease_span): 3 ms a start, 5 ms at least, within the
/// period's twentieth (here 50 ms). A window a lease fills opens again that
/// much later for its starts.
#[test]
fn a_leases_span_is_as_long_as_its_starts_take() {
    let q = queue("spans");
    let id = format!("class:Spans-{q}");
    push_rated(&q, &id, (1_000_000, 60.0), 0, 20);
    let c = processor();
    let mut conn = redis();
    let mut held = next(&c, &q, None);
    held = next(&c, &q, held);
    let mut asked = Vec::new();
    for _ in 0..15 {
        let before = redis_now(&mut conn);
        let known = grants(&id).len();
        held = next(&c, &q, held);
        let after = redis_now(&mut conn);
        if let Some(&(stamp, starts)) = grants(&id).get(known) {
            asked.push((starts, stamp - before, after - before));
        }
    }
    // 1, 2, 4, 8... (less where a lease's span ended first, on a loaded
    // machine): spans of 5, 6, 12, 24 ms...
    let sizes: Vec<usize> = asked.iter().map(|a| a.0).collect();
    assert!(
        sizes.contains(&1) && sizes.iter().any(|&n| n >= 4),
        "grants {asked:?}"
    );
    for (starts, ahead, trip) in asked {
        let span = (starts as u64 * 3_000).clamp(5_000, 50_000);
        assert!(
            ahead <= span + trip && ahead + trip >= span,
            "{starts} starts stamped {ahead} us ahead (span {span}, round trip {trip})"
        );
    }
}

/// A window near its limit (past half of it, or within 64 starts, after a
/// grant) is the script's: the grant that finds it so is of one start, and
/// the thread asks no lease of that limit for a while (a period, 10 s at
/// most): its next jobs go straight to the script, with no hand-over
/// tried.
#[test]
fn a_window_near_its_limit_is_left_to_the_script() {
    let q = queue("scarce");
    let id = format!("class:Scarce-{q}");
    // Near: less than 64 starts of room. Nothing is parked (the rate never
    // refuses these 30 jobs).
    push_rated_or_discarded(&q, &id, (80, 60.0), true, 0, 30);
    let c = processor();
    let mut held = next(&c, &q, None);
    held = next(&c, &q, held);
    let mut handed = Vec::new();
    for _ in 2..30 {
        let before = c.hand_overs();
        held = next(&c, &q, held);
        assert!(held.is_some(), "a job");
        handed.push(c.hand_overs() - before);
    }
    // The script's two, then grants of 1, 2 and 4 (9 counted, 71 of room
    // left); 8 more would leave 63: one. Leases end at 16 counted at most
    // (a lease's span ended first, on a loaded machine, asks again): 15
    // leased, as many hand-overs; none after.
    let sizes: Vec<usize> = grants(&id).into_iter().map(|g| g.1).collect();
    let leased: usize = sizes.iter().sum();
    assert!(leased <= 15 && sizes.contains(&1), "grants {sizes:?}");
    assert!(handed.iter().sum::<u64>() >= 3, "hand-overs: {handed:?}");
    assert!(handed[15..].iter().all(|&n| n == 0), "after: {handed:?}");
    assert_eq!(counted(&id).len(), 30, "every start counted");
}

/// A fetch script that starts a job of a rate near its limit (here past
/// half of it, with more than 64 starts of room) leaves its queue to the
/// script: the run's next fetches on the thread try no hand-over (no lease
/// is asked there).
#[test]
fn a_look_that_started_a_job_near_its_rates_limit_leaves_the_run_to_the_script() {
    let q = queue("near");
    let id = format!("class:Near-{q}");
    let rate = (200, 60.0);
    push_rated_or_discarded(&q, &id, rate, true, 0, 8);
    // 110 starts counted already (as another capsule's would be).
    let mut conn = redis();
    let now = redis_now(&mut conn);
    for i in 0..110 {
        let _: () = conn
            .zadd(keys::job_starts(&id), format!("other:{i}"), now)
            .unwrap();
    }
    let c = processor();
    let mut held = next(&c, &q, None);
    held = next(&c, &q, held);
    by_scripts(&c, &q, held, 6);
    assert_eq!(grants(&id), [], "no lease");
}

/// Takes `jobs` more jobs of `q` after `held`, each a script's: the
/// capsule tries no hand-over for any.
fn by_scripts(c: &Capsule, q: &str, mut held: Option<Fetched>, jobs: usize) -> Option<Fetched> {
    let before = c.hand_overs();
    for _ in 0..jobs {
        held = next(c, q, held);
        assert!(held.is_some(), "a job");
    }
    assert_eq!(c.hand_overs() - before, 0, "hand-overs tried");
    held
}

/// Capsules (their acknowledgements riding on their fetches) on database
/// `db` of the tests' server, and a connection to it: a test whose jobs
/// park behind a rate (`rate_due` is one key a database) keeps them from
/// the others' runs.
struct Database {
    settings: ConnectionSettings,
    conn: redis::Connection,
}

impl Database {
    fn new(db: i64) -> Database {
        let settings = ConnectionSettings {
            db,
            ..support::settings()
        };
        let url = format!("redis://127.0.0.1:{}/{db}", settings.port);
        let mut conn = redis::Client::open(url).unwrap().get_connection().unwrap();
        let _: () = conn.set(keys::LAST_BEAT, "a-beating-fleet").unwrap();
        Database { settings, conn }
    }

    fn processor(&self) -> Capsule {
        let options = CapsuleOptions {
            ack_grace: Duration::from_secs(10),
            ..CapsuleOptions::default()
        };
        let capsule = Capsule::new(&self.settings, options);
        capsule.register(&Interrupt::new()).unwrap();
        capsule
    }

    fn push_rated(&mut self, q: &str, id: &str, rate: (u64, f64), n: usize) {
        for i in 0..n {
            let job = rated(q, &format!("j{i}"), id, rate, false);
            let _: () = self.conn.lpush(format!("queue:{q}"), job).unwrap();
        }
    }
}

/// While jobs are parked behind a rate (any: `rate_due`, which sends a
/// bare rate's hand-over to the script), a fetch script's look says when
/// they may go, and the thread tries no hand-over of a bare rate's run: its
/// jobs go straight to the script.
#[test]
fn a_look_that_saw_parked_rates_leaves_a_bare_rates_run_to_the_script() {
    let mut db = Database::new(1);
    // One of two jobs of an hourly rate of 1 parked behind it.
    let (parked_q, parked_id) = (queue("parks"), format!("class:Parks-{}", queue("")));
    db.push_rated(&parked_q, &parked_id, (1, 3600.0), 2);
    let other = db.processor();
    let first = next(&other, &parked_q, None);
    assert!(first.is_some() && next(&other, &parked_q, first).is_none());
    let due: Option<String> = db.conn.get(keys::RATE_DUE).unwrap();
    assert!(due.is_some(), "parked behind the rate");
    // A bare rate's run, far from its limit.
    let q = queue("bare");
    let id = format!("class:Bare-{q}");
    db.push_rated(&q, &id, (1_000_000, 60.0), 8);
    let c = db.processor();
    let mut held = next(&c, &q, None);
    held = next(&c, &q, held);
    by_scripts(&c, &q, held, 6);
}

/// Jobs sent back for a rate wait for a script, which counts their starts:
/// the look that takes one while others are still to start leaves the
/// queue to the script, and the thread's next fetch tries no hand-over
/// (whose lease would be refused), though the window has room.
#[test]
fn a_look_that_took_a_job_sent_back_for_its_rate_leaves_the_run_to_the_script() {
    let mut db = Database::new(2);
    let q = queue("sent-back");
    let id = format!("class:SentBack-{q}");
    let rate = (100, 0.3);
    // A window full (as other capsules' starts would fill it).
    let now = redis_now(&mut db.conn);
    for i in 0..100 {
        let _: () = db
            .conn
            .zadd(keys::job_starts(&id), format!("other:{i}"), now)
            .unwrap();
    }
    db.push_rated(&q, &id, rate, 6);
    let c = db.processor();
    let held = next(&c, &q, None);
    assert!(held.is_none(), "parked");
    // The window opens: all six go back; the script takes one.
    std::thread::sleep(Duration::from_millis(350));
    let held = next(&c, &q, held);
    assert!(held.is_some(), "sent back and taken");
    by_scripts(&c, &q, held, 5);
    let left: Option<String> = db.conn.get(keys::job_released(&id)).unwrap();
    assert_eq!(left, None, "every job sent back started");
}

/// A small xorshift generator: random arrivals and job lengths, from a
/// seed printed on failure.
struct Random(u64);

impl Random {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Each start as known: between the clock before its fetch was sent and
/// after it returned (microseconds; Redis runs on this host, on its clock).
type Start = (u64, u64);

/// A group of `limit` + 1 starts that surely fell within one window of
/// `period`: the last of them returned less than a period after the first
/// was asked for.
fn too_many(starts: &[Start], limit: usize, period: u64) -> Option<Vec<Start>> {
    let mut by_asked = starts.to_vec();
    by_asked.sort_unstable();
    for (i, first) in by_asked.iter().enumerate() {
        let mut later: Vec<Start> = by_asked[i + 1..].to_vec();
        later.sort_unstable_by_key(|s| s.1);
        if later.len() < limit {
            break;
        }
        let group = &later[..limit];
        let last = group.iter().map(|s| s.1).max().unwrap_or(0).max(first.1);
        if last - first.0 < period {
            let mut found = vec![*first];
            found.extend_from_slice(group);
            return Some(found);
        }
    }
    None
}

/// Random bursts of arrivals, each more than a window takes, at random
/// gaps, of jobs dropped over the rate (nothing parked: the threads'
/// fetches contest each window as it opens, on leases while it is less
/// than half full, one start at a time near its limit), random job
/// lengths (a lease spent over its span), two capsules of two threads
/// each: no window of the period holds more than the limit's starts, each
/// start's time bounded by Redis's clock around its fetch; and leases were
/// spent.
#[test]
fn over_random_arrivals_no_window_holds_more_than_the_limit() {
    let q = queue("windows");
    let id = format!("class:Windows-{q}");
    // Spans of 5 to 50 ms.
    let (limit, period) = (100_u64, 1.0);
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64)
        | 1;
    let done = Arc::new(AtomicBool::new(false));
    let pusher = {
        let (q, id, done) = (q.clone(), id.clone(), done.clone());
        std::thread::spawn(move || {
            let mut random = Random(seed);
            let mut pushed = 0;
            while !done.load(Ordering::Relaxed) {
                // Bursts of 150..450 jobs 0.6..1.6 s apart.
                let n = 150 + random.below(301) as usize;
                push_rated_or_discarded(&q, &id, (limit, period), true, pushed, n);
                pushed += n;
                std::thread::sleep(Duration::from_millis(600 + random.below(1000)));
            }
        })
    };
    let capsules: Vec<Arc<Capsule>> = (0..2).map(|_| Arc::new(processor())).collect();
    let mut threads = Vec::new();
    for (t, c) in capsules
        .iter()
        .flat_map(|c| [c.clone(), c.clone()])
        .enumerate()
    {
        let (q, done) = (q.clone(), done.clone());
        threads.push(std::thread::spawn(move || {
            let mut random = Random(seed.wrapping_mul(t as u64 + 3) | 1);
            let (mut starts, mut handed) = (Vec::new(), 0);
            let mut held = None;
            while !done.load(Ordering::Relaxed) {
                let asked = clock();
                let (fetched, alone) = next_counted(&c, &q, held.take());
                let returned = clock();
                match fetched {
                    Some(job) => {
                        starts.push((asked, returned));
                        handed += usize::from(alone);
                        held = Some(job);
                        // The job's own length: mostly none (a lease is
                        // spent whole, over part of its span), at times
                        // longer than a span.
                        let micros = match random.below(10) {
                            0 => 20_000 + random.below(60) * 1_000,
                            _ => random.below(4) * 500,
                        };
                        std::thread::sleep(Duration::from_micros(micros));
                    }
                    None => std::thread::sleep(Duration::from_millis(random.below(3))),
                }
            }
            if let Some(job) = held {
                c.acknowledge(&q, job.job);
            }
            (starts, handed)
        }));
    }
    std::thread::sleep(Duration::from_secs(5));
    done.store(true, Ordering::Relaxed);
    pusher.join().unwrap();
    let (mut starts, mut handed) = (Vec::new(), 0);
    for thread in threads {
        let (some, n) = thread.join().unwrap();
        starts.extend(some);
        handed += n;
    }
    let period_us = (period * 1_000_000.0) as u64;
    let found = too_many(&starts, limit as usize, period_us);
    assert!(
        found.is_none(),
        "seed {seed}: {} starts within {period} s: {found:?}",
        limit + 1
    );
    assert!(starts.len() >= 60, "seed {seed}: {} starts", starts.len());
    assert!(handed > 0, "seed {seed}: no start was leased");
    eprintln!(
        "seed {seed}: {} starts, {handed} handed over on leases",
        starts.len()
    );
}
