//! Wakes a capsule's idle fetchers when something that decides what they may
//! fetch changes in Redis, so that an idle fetcher blocks instead of polling.
//!
//! Redis's client-side caching does the listening. The capsule's connection
//! (RESP3) turns on `CLIENT TRACKING ... OPTIN NOLOOP` and runs the fetch
//! script in its arming mode after `CLIENT CACHING yes`: it reads every key
//! what the queues offer depends on (each queue's limits and busy list, and
//! the queue itself while it is under its limits). Redis then sends an
//! `invalidate` message when one of them is next written by another
//! connection: a client's `LPUSH`, an acknowledgement, a limit change, a
//! reaper, and the capsule's own fetching threads, whose connections are
//! others too. A fetch that takes again the slot it frees writes no busy list
//! and a full queue's key is not tracked, so a busy capsule's fetches ring
//! nobody. Nothing is consumed and nothing is polled. Writes on the tracking
//! connection itself send nothing (NOLOOP) but still end the tracking of
//! what they write: while a fetcher sleeps, a fetch there reads again, in its
//! script, the keys it wrote; any other such write disarms the bell and wakes
//! a waiter, which arms it again. A fetch that leaves another job eligible
//! wakes a waiter too.
//!
//! A key stays tracked only until its first write, so each message disarms
//! the bell; the fetcher it wakes looks at once, then arms it again
//! alongside the job it took, or before it looks again if it took none
//! (capsule/retrieve.rs). Two counts
//! order it all: `rings` (invalidations: arming is valid while it has not
//! moved) and `changes` (rings and in-process changes: a waiter sleeps
//! while it has not moved since the look that found nothing).

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{MappedMutexGuard, Mutex, MutexGuard};
use redis::{PushInfo, PushKind};
use tokio::sync::Notify;

use crate::process::{ForkLocal, Stale};
use crate::{Error, Result};

/// How long an observation "these queues hold nothing we may take" stands
/// without a change before a fetcher checks again: a backstop in case a
/// message was lost, which costs one fetch per capsule per period.
const TRUST_EMPTY: Duration = Duration::from_secs(5);

/// After the bell could not be armed: how long fetchers poll instead. Short
/// for a lost connection, long for a refusal (an ACL without
/// `client|tracking`), which retrying will not change.
const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(1);
const RETRY_AFTER_REFUSAL: Duration = Duration::from_secs(60);

/// Timed rings this close together ring once, at the earliest: the looks
/// that set them saw the same window from different moments.
const ALARM_SLACK: Duration = Duration::from_millis(5);

/// A timed ring wakes one waiter; if no look has started this long after
/// (the woken thread not run yet, on a loaded machine), it wakes another,
/// up to [`NUDGES`] more: whichever starts first looks, and the others,
/// finding no look due, sleep again without one.
const NUDGE_AFTER: Duration = Duration::from_millis(3);
const NUDGES: usize = 9;

/// A set of queue names, order ignored: fetchers of one capsule list the
/// same queues in different orders (weighted and random ordering).
pub(crate) type QueueSet = u64;

pub(crate) fn queue_set<S: AsRef<str>>(queues: &[S]) -> QueueSet {
    use std::hash::{Hash, Hasher};
    let sorted: BTreeSet<&str> = queues.iter().map(AsRef::as_ref).collect();
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    sorted.hash(&mut hasher);
    hasher.finish()
}

/// Taken while the bell is armed: any change after it wakes the holder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ticket(u64);

/// How a wait for the bell ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Woken {
    /// Something changed.
    Rang,
    /// The deadline passed.
    TimedOut,
    /// The capsule is quieting: stop waiting, fetch no more.
    Closed,
}

#[derive(Default)]
struct State {
    rings: u64,
    changes: u64,
    /// `rings` when every key of `queues` was last read.
    armed_at: Option<u64>,
    queues: BTreeSet<String>,
    sets: HashSet<QueueSet>,
    /// A look that started at this change count found nothing for this set.
    empty: Option<(u64, QueueSet, Instant)>,
    retry_at: Option<Instant>,
    /// The connection has tracking on (it was armed, and not lost since).
    tracking: bool,
    waiters: usize,
    closed: bool,
    /// When timed rings are due, and for which opening, if known (see
    /// [`Doorbell::ring_at`]); how many rang, and how many of those no look
    /// has started after yet.
    alarms: Vec<(Instant, Option<i64>)>,
    timed: u64,
    due_looks: u64,
}

pub(crate) struct Doorbell {
    /// A forked child's bell starts disarmed.
    state: Mutex<ForkLocal<State>>,
    notify: Notify,
}

impl Default for Doorbell {
    fn default() -> Self {
        Self {
            state: Mutex::new(ForkLocal::new(State::default(), Stale::Drop)),
            notify: Notify::new(),
        }
    }
}

impl Doorbell {
    /// This process's state.
    fn state(&self) -> MappedMutexGuard<'_, State> {
        MutexGuard::map(self.state.lock(), ForkLocal::get)
    }

    /// Takes the connection's push messages: an invalidation, or a lost
    /// connection (which forgets what it tracked), rings.
    pub(crate) fn hear(&self, push: &PushInfo) {
        if matches!(push.kind, PushKind::Invalidate | PushKind::Disconnection) {
            let mut state = self.state();
            state.rings += 1;
            if push.kind == PushKind::Disconnection {
                state.tracking = false;
            }
            drop(state);
            self.changed();
        }
    }

    /// The capsule wrote keys it may have armed, without reading them again:
    /// Redis stopped tracking them and, as the writer was this connection
    /// (NOLOOP), said nothing. A silent ring: disarm, and an arming under
    /// way when it came is not quiet (its read may have come first); a
    /// waiter arms again and looks.
    pub(crate) fn wrote(&self) {
        let mut state = self.state();
        state.rings += 1;
        state.armed_at = None;
        state.changes += 1;
        let waiters = state.waiters > 0;
        drop(state);
        if waiters {
            self.notify.notify_one();
        }
    }

    /// True while a fetcher sleeps on a tracking connection: a look then
    /// reads again what it writes, so that tracking goes on, and tells
    /// whether it left another job eligible.
    pub(crate) fn watching(&self) -> bool {
        let state = self.state();
        state.waiters > 0 && state.tracking
    }

    /// Something a waiter may take appeared, by this capsule's doing.
    pub(crate) fn changed(&self) {
        self.state().changes += 1;
        // One fetcher looks; if it leaves more, it rings again.
        self.notify.notify_one();
    }

    /// A ticket if the bell is armed for `set`, else `None` (arm it first).
    /// `set` is worked out only if the bell is armed at all.
    pub(crate) fn ticket(&self, set: impl FnOnce() -> QueueSet) -> Option<Ticket> {
        let state = self.state();
        (state.armed_at == Some(state.rings) && state.sets.contains(&set()))
            .then_some(Ticket(state.changes))
    }

    /// True if a look for `set` that started under `ticket` found nothing,
    /// recently: nothing it depends on has changed since (a rate's window
    /// opening aside: see [`Doorbell::look_due`]). Once that is no
    /// longer recent, one caller gets `false` and looks again while the
    /// others keep trusting it.
    pub(crate) fn known_empty(&self, ticket: Ticket, set: QueueSet) -> bool {
        let mut state = self.state();
        match state.empty.as_mut() {
            Some((at, s, when)) if *at == ticket.0 && *s == set => {
                if when.elapsed() < TRUST_EMPTY {
                    return true;
                }
                *when = Instant::now();
                false
            }
            _ => false,
        }
    }

    pub(crate) fn found_empty(&self, ticket: Ticket, set: QueueSet) {
        self.state().empty = Some((ticket.0, set, Instant::now()));
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
        handle.spawn(async move {
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

    /// Ends every wait, now and later: the capsule is quieting.
    pub(crate) fn close(&self) {
        self.state().closed = true;
        self.notify.notify_waiters();
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.state().closed
    }

    /// Waits until something changes after `ticket`, `deadline` passes, or
    /// the capsule quiets.
    pub(crate) async fn wait(&self, ticket: Ticket, deadline: tokio::time::Instant) -> Woken {
        let notified = self.notify.notified();
        tokio::pin!(notified);
        // Registered before the check: a change in between is not missed.
        notified.as_mut().enable();
        {
            let mut state = self.state();
            if state.closed {
                return Woken::Closed;
            }
            if state.changes != ticket.0 {
                return Woken::Rang;
            }
            state.waiters += 1;
        }
        let _waiting = Waiting(self);
        tokio::select! {
            _ = &mut notified => if self.is_closed() { Woken::Closed } else { Woken::Rang },
            _ = tokio::time::sleep_until(deadline) => Woken::TimedOut,
        }
    }

    /// Arms the bell for `queues`: `read` turns tracking on and reads, in
    /// one round trip, every key fetches of the queues it is given depend on
    /// (all those the bell is for), and says what it read (`T`). `Ok(false,
    /// _)` if it rang meanwhile: the caller looks again (something changed)
    /// and arms again. Fails fast while a recent failure stands: the caller
    /// polls instead.
    pub(crate) async fn arm<F, R, T>(&self, queues: &[String], read: F) -> Result<(bool, T)>
    where
        F: FnOnce(Vec<String>) -> R,
        R: std::future::Future<Output = Result<T>>,
    {
        let (before, all) = self.begin_arm(queues)?;
        let mut value = None;
        let read = read(all).await.map(|read| value = Some(read));
        let quiet = self.end_arm(before, read)?;
        value
            .map(|value| (quiet, value))
            .ok_or_else(|| Error::Connection("the doorbell's read said nothing".into()))
    }

    /// The first half of arming: records `queues` among those the bell is
    /// for, and returns the ring count to arm at and every queue to read.
    fn begin_arm(&self, queues: &[String]) -> Result<(u64, Vec<String>)> {
        let set = queue_set(queues);
        let mut state = self.state();
        if state.retry_at.is_some_and(|at| Instant::now() < at) {
            return Err(Error::Connection("the doorbell is unavailable".into()));
        }
        state.queues.extend(queues.iter().cloned());
        state.sets.insert(set);
        Ok((state.rings, state.queues.iter().cloned().collect()))
    }

    /// The second half, given the outcome of the read.
    fn end_arm(&self, before: u64, read: Result<()>) -> Result<bool> {
        let mut state = self.state();
        match read {
            Ok(()) => {
                state.retry_at = None;
                state.tracking = true;
                let quiet = state.rings == before;
                if quiet {
                    state.armed_at = Some(before);
                }
                Ok(quiet)
            }
            Err(err) => {
                state.tracking = false;
                let pause = match err {
                    Error::Command(_) => RETRY_AFTER_REFUSAL,
                    _ => RETRY_AFTER_FAILURE,
                };
                state.retry_at = Some(Instant::now() + pause);
                Err(err)
            }
        }
    }
}

/// Counts a sleeping fetcher for as long as it sleeps.
struct Waiting<'a>(&'a Doorbell);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let mut state = self.0.state();
        state.waiters = state.waiters.saturating_sub(1);
    }
}

#[cfg(test)]
mod tests;
