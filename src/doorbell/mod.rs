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
    /// A message woke a waiter and no look has started since (see
    /// [`Doorbell::hear`]).
    heard_unlooked: bool,
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
    /// A read of when the first window opens is to start (see
    /// [`Doorbell::heard_wake_time`]).
    wake_read: bool,
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
    /// connection (which forgets what it tracked), rings. A message wakes a
    /// waiter unless one woken by an earlier message has not started its
    /// look yet: that look reads after both (a write of several tracked
    /// keys sends a message for each, and each would wake a fetcher that
    /// looks, then arms the bell again and looks once more). True instead
    /// of a ring where the message says only that the first window's
    /// opening moved (see [`Doorbell::heard_wake_time`]): the caller reads
    /// it again, once for all such messages until it starts.
    pub(crate) fn hear(&self, push: &PushInfo) -> bool {
        if let Some(read_again) = self.heard_wake_time(push) {
            return read_again;
        }
        if matches!(push.kind, PushKind::Invalidate | PushKind::Disconnection) {
            self.ring(push.kind == PushKind::Disconnection);
        }
        false
    }

    /// An invalidation, or a lost connection (`lost`): disarms, wakes a
    /// waiter (see [`Doorbell::hear`]).
    fn ring(&self, lost: bool) {
        let mut state = self.state();
        state.rings += 1;
        state.changes += 1;
        if lost {
            state.tracking = false;
        }
        let wake = !std::mem::replace(&mut state.heard_unlooked, true);
        drop(state);
        if wake {
            self.notify.notify_one();
        }
    }

    /// A look starts (its script is sent): it reads what every message
    /// heard so far announced, so the next message wakes a waiter again.
    pub(crate) fn looking(&self) {
        self.state().heard_unlooked = false;
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

mod alarm;

#[cfg(test)]
mod tests;
