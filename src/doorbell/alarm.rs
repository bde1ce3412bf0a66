//! The doorbell's timed rings: a rate's window opens at a moment no write
//! announces, so a look that saw it sets an alarm that wakes one waiter
//! then (see [`Doorbell::ring_at`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::Doorbell;

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
