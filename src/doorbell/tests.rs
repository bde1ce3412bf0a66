//! The doorbell's state machine, fed by hand: no Redis, no connection.

use std::time::Duration;

use redis::{PushInfo, PushKind};

use super::{queue_set, Doorbell, Ticket, Woken};
use crate::Error;

fn queues(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| n.to_string()).collect()
}

fn push(kind: PushKind) -> PushInfo {
    PushInfo { kind, data: vec![] }
}

/// Arms `bell` for `names` with a read that succeeded; the queues it read.
fn armed(bell: &Doorbell, names: &[&str]) -> Vec<String> {
    let (before, all) = bell.begin_arm(&queues(names)).expect("arming allowed");
    assert_eq!(bell.end_arm(before, Ok(())).ok(), Some(true));
    all
}

/// Arms `bell` for queue "a" and takes a ticket.
fn armed_on_a(bell: &Doorbell) -> Ticket {
    armed(bell, &["a"]);
    bell.ticket(|| queue_set(&["a"])).expect("armed")
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime")
        .block_on(future)
}

fn soon() -> tokio::time::Instant {
    tokio::time::Instant::now() + Duration::from_millis(20)
}

#[test]
fn an_unarmed_bell_gives_no_ticket() {
    let bell = Doorbell::default();
    assert_eq!(bell.ticket(|| queue_set(&["a"])), None);
    assert!(!bell.watching());
}

#[test]
fn arming_gives_tickets_for_the_sets_armed_for_only() {
    let bell = Doorbell::default();
    assert_eq!(armed(&bell, &["b", "a"]), queues(&["a", "b"]));
    // Order does not matter: weighted fetchers list queues in any order.
    assert!(bell.ticket(|| queue_set(&["a", "b"])).is_some());
    assert!(bell.ticket(|| queue_set(&["b", "a"])).is_some());
    assert_eq!(bell.ticket(|| queue_set(&["a"])), None);
    // A second set adds its queues: every key read again covers both.
    assert_eq!(armed(&bell, &["c"]), queues(&["a", "b", "c"]));
    assert!(bell.ticket(|| queue_set(&["c"])).is_some());
}

#[test]
fn a_ring_while_arming_leaves_the_bell_unarmed() {
    let bell = Doorbell::default();
    let (before, _) = bell.begin_arm(&queues(&["a"])).expect("arming allowed");
    bell.hear(&push(PushKind::Invalidate));
    assert_eq!(bell.end_arm(before, Ok(())).ok(), Some(false));
    assert_eq!(bell.ticket(|| queue_set(&["a"])), None);
}

#[test]
fn an_invalidation_or_a_lost_connection_disarms_and_rings() {
    for kind in [PushKind::Invalidate, PushKind::Disconnection] {
        let bell = Doorbell::default();
        let ticket = armed_on_a(&bell);
        bell.hear(&push(kind.clone()));
        assert_eq!(bell.ticket(|| queue_set(&["a"])), None, "{kind:?}");
        assert_eq!(block_on(bell.wait(ticket, soon())), Woken::Rang, "{kind:?}");
    }
}

/// How many of three waiters a burst of `messages` invalidations wakes.
fn woken_by_burst(bell: &Doorbell, messages: usize) -> usize {
    let ticket = armed_on_a(bell);
    let deadline = tokio::time::Instant::now() + Duration::from_millis(100);
    let burst = async {
        tokio::task::yield_now().await;
        (0..messages).for_each(|_| {
            bell.hear(&push(PushKind::Invalidate));
        });
    };
    let (a, b, c, ()) = block_on(async {
        let wait = || bell.wait(ticket, deadline);
        tokio::join!(wait(), wait(), wait(), burst)
    });
    [a, b, c].iter().filter(|w| **w == Woken::Rang).count()
}

/// A write of several tracked keys sends a message for each: the first
/// wakes a waiter, the others none while its look has not started (it
/// reads after them all); a message after that look started wakes another.
#[test]
fn messages_before_the_woken_waiters_look_wake_no_other() {
    let bell = Doorbell::default();
    assert_eq!(woken_by_burst(&bell, 3), 1);
    bell.looking();
    assert_eq!(woken_by_burst(&bell, 1), 1, "after the look started");
}

#[test]
fn other_push_messages_change_nothing() {
    let bell = Doorbell::default();
    let ticket = armed_on_a(&bell);
    bell.hear(&push(PushKind::Message));
    assert_eq!(bell.ticket(|| queue_set(&["a"])), Some(ticket));
    assert_eq!(block_on(bell.wait(ticket, soon())), Woken::TimedOut);
}

#[test]
fn a_write_of_the_tracking_connection_disarms_and_rings() {
    let bell = Doorbell::default();
    let ticket = armed_on_a(&bell);
    bell.wrote();
    assert_eq!(bell.ticket(|| queue_set(&["a"])), None);
    assert_eq!(block_on(bell.wait(ticket, soon())), Woken::Rang);
}

/// Its write may have come after the arming's read: the arming is not
/// quiet, and the bell stays unarmed.
#[test]
fn a_write_of_the_tracking_connection_while_arming_spoils_the_arming() {
    let bell = Doorbell::default();
    let (before, _) = bell.begin_arm(&queues(&["a"])).expect("arming allowed");
    bell.wrote();
    assert_eq!(bell.end_arm(before, Ok(())).ok(), Some(false));
    assert_eq!(bell.ticket(|| queue_set(&["a"])), None);
}

#[test]
fn a_change_by_the_capsule_rings_but_leaves_the_bell_armed() {
    let bell = Doorbell::default();
    let ticket = armed_on_a(&bell);
    bell.changed();
    let next = bell.ticket(|| queue_set(&["a"])).expect("still armed");
    assert_ne!(next, ticket);
    assert_eq!(block_on(bell.wait(ticket, soon())), Woken::Rang);
    assert_eq!(block_on(bell.wait(next, soon())), Woken::TimedOut);
}

#[test]
fn an_empty_look_is_trusted_until_something_changes() {
    let bell = Doorbell::default();
    armed(&bell, &["a"]);
    let set = queue_set(&["a"]);
    let ticket = bell.ticket(|| set).expect("armed");
    assert!(!bell.known_empty(ticket, set));
    bell.found_empty(ticket, set);
    assert!(bell.known_empty(ticket, set));
    assert!(!bell.known_empty(ticket, queue_set(&["b"])));
    bell.changed();
    let after = bell.ticket(|| set).expect("armed");
    assert!(!bell.known_empty(after, set));
}

#[test]
fn watching_while_a_fetcher_sleeps_on_a_tracking_connection() {
    let bell = Doorbell::default();
    let ticket = armed_on_a(&bell);
    block_on(async {
        let sleeper = bell.wait(ticket, tokio::time::Instant::now() + Duration::from_secs(5));
        tokio::pin!(sleeper);
        // Polled once: the fetcher now sleeps.
        assert!(futures_poll_once(sleeper.as_mut()).await.is_none());
        assert!(bell.watching());
        bell.hear(&push(PushKind::Disconnection));
        // Tracking was lost with the connection: looks stop reading back.
        assert!(!bell.watching());
        assert_eq!(sleeper.await, Woken::Rang);
    });
    assert!(!bell.watching());
}

/// Polls `future` once: its output if it was ready.
async fn futures_poll_once<F: std::future::Future + Unpin>(mut future: F) -> Option<F::Output> {
    std::future::poll_fn(|cx| {
        std::task::Poll::Ready(match std::pin::Pin::new(&mut future).poll(cx) {
            std::task::Poll::Ready(out) => Some(out),
            std::task::Poll::Pending => None,
        })
    })
    .await
}

#[test]
fn closing_ends_every_wait_now_and_later() {
    let bell = Doorbell::default();
    let ticket = armed_on_a(&bell);
    bell.close();
    assert!(bell.is_closed());
    assert_eq!(block_on(bell.wait(ticket, soon())), Woken::Closed);
}

#[test]
fn a_failed_arming_makes_fetchers_poll_for_a_while() {
    for (error, pause) in [
        (Error::Command("NOPERM".into()), super::RETRY_AFTER_REFUSAL),
        (Error::Connection("lost".into()), super::RETRY_AFTER_FAILURE),
    ] {
        let bell = Doorbell::default();
        let (before, _) = bell.begin_arm(&queues(&["a"])).expect("arming allowed");
        assert!(bell.end_arm(before, Err(error)).is_err());
        assert!(matches!(
            bell.begin_arm(&queues(&["a"])),
            Err(Error::Connection(_))
        ));
        assert_eq!(bell.ticket(|| queue_set(&["a"])), None);
        let retry_at = bell.state().retry_at.expect("a pause");
        let left = retry_at - std::time::Instant::now();
        assert!(
            left <= pause && left > pause - Duration::from_secs(1),
            "{left:?}"
        );
    }
}

/// A rate's window opening, seen from looks a few milliseconds apart, rings
/// once, at the earliest of their times.
#[test]
fn timed_rings_close_together_ring_once_at_the_earliest() {
    let bell = std::sync::Arc::new(Doorbell::default());
    let ticket = armed_on_a(&bell);
    let timed = bell.state().timed;
    let start = std::time::Instant::now();
    bell.ring_at(start + Duration::from_millis(60), None);
    bell.ring_at(start + Duration::from_millis(62), None);
    bell.ring_at(start + Duration::from_millis(58), None);
    std::thread::sleep(Duration::from_millis(40));
    // (A loaded machine may have slept past it.)
    if start.elapsed() < Duration::from_millis(55) {
        assert_eq!(bell.state().timed, timed, "not before its time");
    }
    // (The runtime's thread may run late: each ring is waited for.)
    let rung = |n| {
        let deadline = start + Duration::from_secs(3);
        while bell.state().timed < timed + n && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(20));
        bell.state().timed - timed
    };
    assert_eq!(rung(1), 1, "one ring for the three");
    assert!(bell.state().alarms.is_empty());
    bell.ring_at(start + Duration::from_millis(200), None);
    bell.ring_at(start + Duration::from_millis(300), None);
    let first = rung(2);
    if start.elapsed() < Duration::from_millis(290) {
        assert_eq!(first, 2, "the first of two apart");
    }
    assert_eq!(rung(3), 3, "then the second");
    assert_eq!(bell.state().changes, ticket.0, "no change for all");
}

/// A window's opening wakes one waiter, not all: the others sleep on, and
/// a fetcher that comes back with its ticket trusts what a look found
/// before the ring; the one look after it is due once, whoever starts it.
#[test]
fn a_timed_ring_wakes_one_waiter_and_leaves_the_others_asleep() {
    let bell = std::sync::Arc::new(Doorbell::default());
    let ticket = armed_on_a(&bell);
    let set = queue_set(&["a"]);
    bell.found_empty(ticket, set);
    assert!(!bell.look_due(), "no ring yet");
    // A woken waiter starts its look at once.
    let waiter = |deadline| {
        let bell = bell.clone();
        async move {
            let woken = bell.wait(ticket, deadline).await;
            if woken == Woken::Rang {
                assert!(bell.look_due(), "its look is due");
            }
            woken
        }
    };
    let woken = block_on(async {
        let deadline = tokio::time::Instant::now() + Duration::from_millis(300);
        bell.ring_at(std::time::Instant::now() + Duration::from_millis(50), None);
        let (a, b, c) = tokio::join!(waiter(deadline), waiter(deadline), waiter(deadline));
        [a, b, c]
    });
    let rang = woken.iter().filter(|w| **w == Woken::Rang).count();
    assert_eq!(rang, 1, "{woken:?}");
    assert_eq!(woken.iter().filter(|w| **w == Woken::TimedOut).count(), 2);
    // A waiter that comes back with its ticket sleeps again.
    assert_eq!(
        block_on(bell.wait(ticket, soon())),
        Woken::TimedOut,
        "its ticket stands"
    );
    assert!(bell.known_empty(ticket, set), "the look before it stands");
    assert!(!bell.look_due(), "one look only");
}

/// A woken waiter that does not start its look (its thread not run yet) is
/// not waited for alone: a few milliseconds on, another wakes, and another.
#[test]
fn a_timed_ring_wakes_another_waiter_while_no_look_started() {
    let bell = std::sync::Arc::new(Doorbell::default());
    let ticket = armed_on_a(&bell);
    let woken = block_on(async {
        let deadline = tokio::time::Instant::now() + Duration::from_millis(200);
        bell.ring_at(std::time::Instant::now() + Duration::from_millis(20), None);
        let (a, b, c) = tokio::join!(
            bell.wait(ticket, deadline),
            bell.wait(ticket, deadline),
            bell.wait(ticket, deadline)
        );
        [a, b, c]
    });
    assert_eq!(woken, [Woken::Rang, Woken::Rang, Woken::Rang]);
    assert!(bell.look_due(), "still due");
}

/// One window's opening, seen by two looks whose replies came 30 ms apart
/// (more than the slack between moments): one ring, at the earlier time,
/// whichever came first; another opening at the same moments rings apart.
#[test]
fn one_opening_seen_by_looks_far_apart_rings_once_at_the_earlier() {
    let bell = std::sync::Arc::new(Doorbell::default());
    let _ticket = armed_on_a(&bell);
    let timed = bell.state().timed;
    let start = std::time::Instant::now();
    bell.ring_at(start + Duration::from_millis(80), Some(1_000));
    bell.ring_at(start + Duration::from_millis(50), Some(1_000));
    bell.ring_at(start + Duration::from_millis(90), Some(1_000));
    assert_eq!(bell.state().alarms.len(), 1, "one timer");
    std::thread::sleep(Duration::from_millis(70));
    if start.elapsed() < Duration::from_millis(78) {
        assert_eq!(bell.state().timed, timed + 1, "rang at the earlier");
    }
    std::thread::sleep(Duration::from_millis(60));
    assert_eq!(bell.state().timed, timed + 1, "once");
    let start = std::time::Instant::now();
    bell.ring_at(start + Duration::from_millis(30), Some(2_000));
    bell.ring_at(start + Duration::from_millis(60), Some(3_000));
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(bell.state().timed, timed + 3, "two openings, two rings");
}
