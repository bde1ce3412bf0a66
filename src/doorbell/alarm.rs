//! The doorbell's timed rings: a rate's window opens at a moment no write
//! announces, so a look that saw it sets an alarm that wakes one waiter
//! then (see [`Doorbell::ring_at`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use redis::{PushInfo, PushKind, Value};

use super::Doorbell;
use crate::keys;

/// Timed rings this close together ring once, at the earliest: the looks
/// that set them saw the same window from different moments.
const ALARM_SLACK: Duration = Duration::from_millis(5);

/// A timed ring wakes one waiter; if no look has started this long after
/// (the woken thread not run yet, on a loaded machine), it wakes another,
/// up to [`NUDGES`] more: whichever starts first looks, and the others,
/// finding no look due, sleep again without one.
const NUDGE_AFTER: Duration = Duration::from_millis(3);
const NUDGES: usize = 9;

impl Doorbell {
    /// Whether `push` invalidates only the keys that say when the first
    /// window opens ([`keys::WAKE_TIME`]), heard while the bell is armed: that
    /// moves a timed ring, and changes nothing a look would find now. A
    /// ring would wake a fetcher to look and to arm the bell again, two
    /// scripts, which every last parked job's going cost (it deletes
    /// them), and every parking by another process. Instead, `Some(true)`:
    /// the caller reads them again with tracking (`Capsule`'s
    /// `read_wake_time`), and sets the ring; `Some(false)`: such a read is
    /// still to start, and reads after this write too. The bell stays
    /// armed: the other keys it read are tracked still. `None`: any other
    /// message, heard as before.
    pub(super) fn heard_wake_time(&self, push: &PushInfo) -> Option<bool> {
        let Some(Value::Array(invalidated)) = push.data.first() else {
            return None;
        };
        let wake_key = |key: &Value| matches!(key, Value::BulkString(key) if keys::WAKE_TIME.iter().any(|k| k.as_bytes() == key.as_slice()));
        if push.kind != PushKind::Invalidate
            || invalidated.is_empty()
            || !invalidated.iter().all(wake_key)
        {
            return None;
        }
        let mut state = self.state();
        if state.closed || !state.tracking || state.armed_at != Some(state.rings) {
            return None;
        }
        Some(!std::mem::replace(&mut state.wake_read, true))
    }

    /// The read [`Doorbell::heard_wake_time`] asked for starts: a message
    /// heard from now on asks for another.
    pub(crate) fn wake_read_starts(&self) {
        self.state().wake_read = false;
    }

    /// That read failed: the keys may be tracked no more. Rings as a lost
    /// connection does: a waiter arms the bell again.
    pub(crate) fn wake_read_failed(&self) {
        self.ring(true);
    }

    /// The alarm set for `at` and `opening` is due: false if it is gone (an
    /// earlier one stood for it), else counted as rung, with its look due.
    fn rings_for(&self, at: Instant, opening: Option<i64>) -> bool {
        let mut state = self.state();
        let set = state.alarms.contains(&(at, opening));
        state.alarms.retain(|alarm| *alarm != (at, opening));
        if set {
            state.timed += 1;
            state.due_looks += 1;
        }
        set
    }

    /// A timed ring's look has not started yet, and the bell is open.
    fn a_look_waits(&self) -> bool {
        let state = self.state();
        state.due_looks > 0 && !state.closed
    }

    /// True once for each timed ring that no look has started after yet:
    /// the look starting now is the one the ring is for, and is not skipped
    /// (see [`Doorbell::ring_at`]).
    pub(crate) fn look_due(&self) -> bool {
        let mut state = self.state();
        let due = state.due_looks > 0;
        state.due_looks = state.due_looks.saturating_sub(1);
        due
    }

    /// Rings at `at`: a rate's window opens then, which no write announces
    /// (the fetch script's "opens in"). It wakes one waiter, the one that
    /// looks and takes what the window lets go (and, if that leaves more,
    /// wakes the next, as any look does), not every one: the others'
    /// tickets stand, and so does what a look before the ring found, which
    /// the others go on trusting (a fetcher whose wait ended fetches again
    /// without a look). One look after the ring is due, the next to start
    /// ([`Doorbell::look_due`]): the woken waiter's, unless another
    /// fetcher's starts first, which then stands for it; a waiter slow to
    /// start it is not waited for alone (see [`NUDGE_AFTER`]).
    ///
    /// One timer per opening: `opening`, when the window opens by Redis's
    /// clock (the script's "opens at"), is the same in every look that saw
    /// it, while `at` is reckoned from when each reply came (late by its
    /// way back, never early): the look that takes a window's job and the
    /// one that carries its acknowledgement both see the next, and their
    /// replies may come far apart on a loaded machine. The earliest `at`
    /// stands. One timer per moment too: a ring set up to [`ALARM_SLACK`]
    /// earlier stands for this one, and this one stands for those set up to
    /// that much later (they ring no more; the look it wakes sees them).
    pub(crate) fn ring_at(self: &Arc<Self>, at: Instant, opening: Option<i64>) {
        {
            let mut state = self.state();
            if state.closed {
                return;
            }
            if let Some(i) = state
                .alarms
                .iter()
                .position(|(_, o)| opening.is_some() && *o == opening)
            {
                if state.alarms[i].0 <= at {
                    return;
                }
                // Its timer finds itself gone.
                state.alarms.remove(i);
            }
            let covered =
                |(set, _): &(Instant, Option<i64>)| *set <= at && at - *set <= ALARM_SLACK;
            if state.alarms.iter().any(covered) {
                return;
            }
            state
                .alarms
                .retain(|(set, _)| !(*set > at && *set - at <= ALARM_SLACK));
            state.alarms.push((at, opening));
        }
        let Ok(handle) = crate::runtime::handle() else {
            return;
        };
        let bell = self.clone();
        crate::runtime::detach(&handle, async move {
            tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await;
            if !bell.rings_for(at, opening) {
                return;
            }
            bell.notify.notify_one();
            for _ in 0..NUDGES {
                tokio::time::sleep(NUDGE_AFTER).await;
                if !bell.a_look_waits() {
                    break;
                }
                bell.notify.notify_one();
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use redis::{PushInfo, PushKind, Value};

    use super::super::{queue_set, Doorbell, Woken};
    use crate::keys;

    fn invalidated(keys: &[&str]) -> PushInfo {
        let keys = keys
            .iter()
            .map(|k| Value::BulkString(k.as_bytes().to_vec()));
        PushInfo {
            kind: PushKind::Invalidate,
            data: vec![Value::Array(keys.collect())],
        }
    }

    fn armed_on_a() -> Doorbell {
        let bell = Doorbell::default();
        let (before, _) = bell.begin_arm(&["a".to_string()]).expect("arming allowed");
        assert_eq!(bell.end_arm(before, Ok(())).ok(), Some(true));
        bell
    }

    /// Whether a waiter holding a ticket taken now is woken within 20 ms
    /// once `then` ran.
    fn wakes(bell: &Doorbell, then: impl FnOnce(&Doorbell)) -> bool {
        let ticket = bell.ticket(|| queue_set(&["a"])).expect("armed");
        then(bell);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a runtime");
        let deadline = tokio::time::Instant::now() + Duration::from_millis(20);
        runtime.block_on(bell.wait(ticket, deadline)) == Woken::Rang
    }

    /// The first window's opening moved: the keys are read again, once for
    /// the messages heard before that read starts; nobody is woken, and the
    /// bell stays armed.
    #[test]
    fn a_wake_time_invalidated_is_read_again_without_a_ring() {
        let bell = armed_on_a();
        let woken = wakes(&bell, |bell| {
            assert!(bell.hear(&invalidated(&[keys::RATE_WAKE])));
            assert!(!bell.hear(&invalidated(&[keys::RATE_DUE])));
            bell.wake_read_starts();
            assert!(bell.hear(&invalidated(&[keys::RATE_DUE, keys::RATE_WAKE])));
        });
        assert!(!woken);
        assert!(bell.ticket(|| queue_set(&["a"])).is_some());
    }

    /// With another key, on a bell not armed, or when the read fails: a
    /// ring, as before.
    #[test]
    fn other_invalidations_and_a_failed_read_ring() {
        let other = invalidated(&[keys::RATE_WAKE, "queue:a"]);
        assert!(wakes(&armed_on_a(), |bell| assert!(!bell.hear(&other))));
        assert!(wakes(&armed_on_a(), |bell| bell.wake_read_failed()));
        let bell = Doorbell::default();
        assert!(!bell.hear(&invalidated(&[keys::RATE_WAKE])));
        assert!(bell.state().rings > 0);
        let flushed = PushInfo {
            kind: PushKind::Invalidate,
            data: vec![Value::Nil],
        };
        assert!(wakes(&armed_on_a(), |bell| assert!(!bell.hear(&flushed))));
    }
}
