//! A fetch that waits: it blocks on the doorbell (Redis client-side caching
//! invalidations) and wakes when a job or a slot appears, without polling.
//! Every test polls with a period far longer than its wait, so only the
//! doorbell can explain a prompt wake-up.

mod support;

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use limit_fetch_core::{keys, Capsule, Error, Fetched, Interrupt, LimitKind, Wait};
use support::{capsule, push, queue, redis};

const LONG: Wait = Wait {
    timeout: Duration::from_secs(20),
    poll: Duration::from_secs(20),
};

/// Well under `LONG`: the wake-up came from the doorbell, not a poll or the
/// timeout. Generous, as the machine may be loaded.
const PROMPT: Duration = Duration::from_secs(5);

/// Starts a waiting fetch of `q` on its own thread; returns once it is
/// blocked: its capsule has made no round trip for a while (the first waiter
/// looks, arms the bell and looks again; later ones find it armed).
fn waiting(
    capsule: &Capsule,
    q: &str,
    wait: Wait,
) -> thread::JoinHandle<(Duration, Option<Fetched>)> {
    let mine = capsule.clone();
    let q = q.to_owned();
    let handle = thread::spawn(move || {
        let started = Instant::now();
        let fetched = mine
            .start_fetch(&[q.as_str()], wait)
            .unwrap()
            .wait(&Interrupt::new())
            .unwrap();
        (started.elapsed(), fetched)
    });
    let mut seen = capsule.round_trips();
    loop {
        thread::sleep(Duration::from_millis(200));
        let now = capsule.round_trips();
        if now == seen {
            return handle;
        }
        seen = now;
    }
}

#[test]
fn a_waiting_fetch_takes_a_job_pushed_later() {
    let q = queue("bell-push");
    let a = capsule();
    let waiter = waiting(&a, &q, LONG);
    push(&q, 1);
    let (waited, fetched) = waiter.join().unwrap();
    assert_eq!(fetched.expect("the pushed job").queue, q);
    assert!(waited < PROMPT, "woke after {waited:?}");
}

#[test]
fn a_waiting_fetch_takes_a_slot_another_capsule_frees() {
    let q = queue("bell-slot");
    push(&q, 2);
    let (a, b) = (capsule(), capsule());
    let none = Interrupt::new();
    a.limits()
        .set_limit(&q, LimitKind::Global, Some(1), &none)
        .unwrap();
    let held = a.fetch(&[q.as_str()], &none).unwrap().expect("a job");
    let waiter = waiting(&b, &q, LONG);
    a.acknowledge(&q, held.job);
    let (waited, fetched) = waiter.join().unwrap();
    assert!(fetched.is_some(), "the freed slot was not taken");
    assert!(waited < PROMPT, "woke after {waited:?}");
    assert_eq!(b.limits().busy(&q, b.uuid(), &none).unwrap(), (1, 1));
}

#[test]
fn a_waiting_fetch_takes_a_slot_its_own_capsule_frees() {
    // Redis does not tell a connection of its own writes (NOLOOP): the
    // capsule rings for them itself.
    let q = queue("bell-own-slot");
    push(&q, 2);
    let a = capsule();
    let none = Interrupt::new();
    a.limits()
        .set_limit(&q, LimitKind::Global, Some(1), &none)
        .unwrap();
    let held = a.fetch(&[q.as_str()], &none).unwrap().expect("a job");
    let waiter = waiting(&a, &q, LONG);
    a.acknowledge(&q, held.job);
    let (waited, fetched) = waiter.join().unwrap();
    assert!(fetched.is_some(), "the freed slot was not taken");
    assert!(waited < PROMPT, "woke after {waited:?}");
}

#[test]
fn a_fetch_that_takes_again_the_slot_it_frees_wakes_no_waiter() {
    // Its acknowledgement and its take of the same queue leave the busy list
    // as it was, and a bell does not track a full queue's own key: nothing a
    // sleeping fetcher of another capsule tracks is written.
    let q = queue("bell-retake");
    push(&q, 5);
    let (a, b) = (capsule(), capsule());
    let none = Interrupt::new();
    a.limits()
        .set_limit(&q, LimitKind::Global, Some(1), &none)
        .unwrap();
    let mut held = a.fetch(&[q.as_str()], &none).unwrap().expect("a job");
    let waiter = waiting(&b, &q, LONG);
    let before = b.round_trips();
    for _ in 0..3 {
        a.acknowledge(&q, held.job);
        held = a
            .fetch(&[q.as_str()], &none)
            .unwrap()
            .expect("the slot again");
    }
    thread::sleep(Duration::from_millis(500));
    assert_eq!(b.round_trips(), before, "the waiter woke and looked");
    assert!(!waiter.is_finished());
    assert_eq!(a.limits().busy(&q, a.uuid(), &none).unwrap(), (1, 1));
    a.acknowledge(&q, held.job);
    a.flush(&none).unwrap();
    let (waited, fetched) = waiter.join().unwrap();
    assert!(fetched.is_some(), "the freed slot was not taken");
    assert!(
        waited < PROMPT + Duration::from_millis(500),
        "woke after {waited:?}"
    );
}

#[test]
fn a_capsule_that_took_and_acknowledged_jobs_still_hears_others() {
    // Its own writes end Redis's tracking of what they write without a word
    // (NOLOOP): each round, its waiter must still hear a push and a slot
    // another capsule frees.
    let q = queue("bell-rounds");
    let (a, b) = (capsule(), capsule());
    let none = Interrupt::new();
    a.limits()
        .set_limit(&q, LimitKind::Global, Some(1), &none)
        .unwrap();
    let mut conn = redis();
    for round in 0..3 {
        // b holds the only slot, booked as its fetch would book it
        let _: () = redis::pipe()
            .cmd("LPUSH")
            .arg(keys::in_progress(b.uuid(), &q))
            .arg("held")
            .cmd("RPUSH")
            .arg(keys::busy(&q))
            .arg(b.uuid())
            .query(&mut conn)
            .unwrap();
        let waiter = waiting(&a, &q, LONG);
        push(&q, 1);
        thread::sleep(Duration::from_millis(100));
        b.acknowledge(&q, b"held".to_vec());
        b.flush(&none).unwrap();
        let (waited, fetched) = waiter.join().unwrap();
        let fetched =
            fetched.unwrap_or_else(|| panic!("round {round}: the freed slot was not taken"));
        assert!(waited < PROMPT, "round {round}: woke after {waited:?}");
        a.acknowledge(&q, fetched.job);
        a.flush(&none).unwrap();
    }
}

#[test]
fn a_waiting_fetch_obeys_a_limit_raised_while_it_waits() {
    let q = queue("bell-limit");
    push(&q, 1);
    let a = capsule();
    let none = Interrupt::new();
    a.limits()
        .set_limit(&q, LimitKind::Global, Some(0), &none)
        .unwrap();
    let waiter = waiting(&a, &q, LONG);
    a.limits()
        .set_limit(&q, LimitKind::Global, Some(1), &none)
        .unwrap();
    let (waited, fetched) = waiter.join().unwrap();
    assert!(fetched.is_some());
    assert!(waited < PROMPT, "woke after {waited:?}");
}

#[test]
fn a_waiting_fetch_obeys_a_limit_raised_without_a_capsule() {
    let q = queue("bell-admin-limit");
    push(&q, 1);
    let a = capsule();
    let limits = limit_fetch_core::Limits::new(&support::settings());
    let none = Interrupt::new();
    limits
        .set_limit(&q, LimitKind::Global, Some(0), &none)
        .unwrap();
    let waiter = waiting(&a, &q, LONG);
    limits
        .set_limit(&q, LimitKind::Global, Some(1), &none)
        .unwrap();
    let (waited, fetched) = waiter.join().unwrap();
    assert!(fetched.is_some());
    assert!(waited < PROMPT, "woke after {waited:?}");
}

#[test]
fn a_waiting_fetch_takes_a_job_of_a_paused_queue_at_once_when_unpaused() {
    let q = queue("bell-unpause");
    push(&q, 1);
    let a = capsule();
    let admin = limit_fetch_core::Limits::new(&support::settings());
    let none = Interrupt::new();
    admin.pause(&q, None, &none).unwrap();
    let waiter = waiting(&a, &q, LONG);
    let unpaused = Instant::now();
    admin.unpause(&q, &none).unwrap();
    let (_, fetched) = waiter.join().unwrap();
    assert!(fetched.is_some());
    let after = unpaused.elapsed();
    assert!(after < PROMPT, "woke {after:?} after the unpause");
}

#[test]
fn a_waiting_fetch_takes_a_job_of_a_paused_queue_at_once_when_its_pause_ends() {
    let q = queue("bell-pause-for");
    push(&q, 1);
    let a = capsule();
    let admin = limit_fetch_core::Limits::new(&support::settings());
    let none = Interrupt::new();
    let pause = Duration::from_millis(1500);
    let paused = Instant::now();
    admin.pause(&q, Some(pause), &none).unwrap();
    let waiter = waiting(&a, &q, LONG);
    let (_, fetched) = waiter.join().unwrap();
    assert!(fetched.is_some());
    let waited = paused.elapsed();
    // Redis deletes an expired key within about 100 ms (its active expiry
    // cycle) and tells the trackers; the fetch's own backstop is 5 s away.
    assert!(
        waited >= pause && waited < pause + Duration::from_secs(1),
        "took the job {waited:?} after a pause of {pause:?}"
    );
}

#[test]
fn a_burst_wakes_as_many_waiters_as_it_feeds() {
    let q = queue("bell-burst");
    let a = capsule();
    let waiters: Vec<_> = (0..4).map(|_| waiting(&a, &q, LONG)).collect();
    push(&q, 4);
    for waiter in waiters {
        let (waited, fetched) = waiter.join().unwrap();
        assert!(fetched.is_some());
        assert!(waited < PROMPT + PROMPT, "woke after {waited:?}");
    }
}

/// A ring disarms the bell: the fetcher it wakes arms it again (alongside
/// the job it took), or those still asleep would hear nothing more.
#[test]
fn the_waiters_a_push_did_not_wake_hear_the_next() {
    let q = queue("bell-next");
    let a = capsule();
    let mut waiters: Vec<_> = (0..3).map(|_| waiting(&a, &q, LONG)).collect();
    for round in 0..2 {
        push(&q, 1);
        let pushed = Instant::now();
        let woken = loop {
            if let Some(i) = waiters.iter().position(|w| w.is_finished()) {
                break waiters.swap_remove(i);
            }
            assert!(pushed.elapsed() < PROMPT, "round {round}: no waiter woke");
            thread::sleep(Duration::from_millis(5));
        };
        assert!(woken.join().unwrap().1.is_some());
        // The arming after the take is done: the next push must ring.
        thread::sleep(Duration::from_millis(300));
        assert!(waiters.iter().all(|w| !w.is_finished()), "round {round}");
    }
    let last = waiters.pop().expect("a waiter left");
    push(&q, 1);
    let pushed = Instant::now();
    assert!(last.join().unwrap().1.is_some());
    assert!(
        pushed.elapsed() < PROMPT,
        "woke {:?} after the push",
        pushed.elapsed()
    );
}

#[test]
fn idle_waiters_send_nothing_to_redis() {
    let q = queue("bell-idle");
    let a = capsule();
    let waiters: Vec<_> = (0..4).map(|_| waiting(&a, &q, LONG)).collect();
    let before = a.round_trips();
    thread::sleep(Duration::from_millis(1500));
    assert_eq!(a.round_trips(), before, "waiters polled Redis");
    push(&q, 4);
    for waiter in waiters {
        assert!(waiter.join().unwrap().1.is_some());
    }
}

#[test]
fn a_waiting_fetch_returns_none_at_its_timeout() {
    let q = queue("bell-timeout");
    let a = capsule();
    let started = Instant::now();
    let wait = Wait {
        timeout: Duration::from_millis(300),
        ..LONG
    };
    let fetched = a
        .start_fetch(&[q.as_str()], wait)
        .unwrap()
        .wait(&Interrupt::new());
    assert!(fetched.unwrap().is_none());
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(300), "{waited:?}");
    assert!(waited < PROMPT, "{waited:?}");
}

#[test]
fn quiet_ends_waiting_fetches_and_later_ones_do_not_wait() {
    let q = queue("bell-quiet");
    let a = capsule();
    let waiter = waiting(&a, &q, LONG);
    a.quiet();
    let (waited, fetched) = waiter.join().unwrap();
    assert!(fetched.is_none());
    assert!(waited < PROMPT, "{waited:?}");
    let started = Instant::now();
    let later = a
        .start_fetch(&[q.as_str()], LONG)
        .unwrap()
        .wait(&Interrupt::new());
    assert!(later.unwrap().is_none());
    assert!(started.elapsed() < PROMPT);
}

#[test]
fn an_interrupted_wait_returns_at_once_and_resumes() {
    let q = queue("bell-interrupt");
    let a = capsule();
    let mut fetch = a.start_fetch(&[q.as_str()], LONG).unwrap();
    let interrupt = Arc::new(Interrupt::new());
    let trigger = interrupt.clone();
    let waker = thread::spawn(move || {
        thread::sleep(Duration::from_millis(300));
        trigger.trigger();
    });
    let started = Instant::now();
    assert!(matches!(fetch.wait(&interrupt), Err(Error::Interrupted)));
    assert!(started.elapsed() < Duration::from_secs(2));
    waker.join().unwrap();
    push(&q, 1);
    let fetched = fetch.wait(&Interrupt::new()).unwrap();
    assert_eq!(fetched.expect("the job, after resuming").queue, q);
}

#[test]
fn without_client_tracking_a_waiting_fetch_polls() {
    let user = format!("no-tracking-{}", uuid::Uuid::new_v4());
    let _: () = redis::cmd("ACL")
        .arg(&[
            "SETUSER", &user, "on", ">pw", "~*", "&*", "+@all", "-client",
        ])
        .query(&mut redis())
        .unwrap();
    let settings = limit_fetch_core::ConnectionSettings {
        username: Some(user.clone()),
        password: Some("pw".into()),
        ..support::settings()
    };
    let a = Capsule::new(&settings, Default::default());
    let q = queue("bell-refused");
    let pusher = {
        let q = q.clone();
        thread::spawn(move || {
            thread::sleep(Duration::from_millis(300));
            push(&q, 1);
        })
    };
    let wait = Wait {
        timeout: Duration::from_secs(10),
        poll: Duration::from_millis(50),
    };
    let started = Instant::now();
    let fetched = a
        .start_fetch(&[q.as_str()], wait)
        .unwrap()
        .wait(&Interrupt::new());
    pusher.join().unwrap();
    let _: () = redis::cmd("ACL")
        .arg(&["DELUSER", &user])
        .query(&mut redis())
        .unwrap();
    assert!(fetched.unwrap().is_some());
    assert!(started.elapsed() < PROMPT);
}
