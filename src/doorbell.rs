//! Wakes a capsule's idle fetchers when something that decides what they may
//! fetch changes in Redis, so that an idle fetcher blocks instead of polling.
//!
//! Redis's client-side caching does the listening: a dedicated RESP3
//! connection with `CLIENT TRACKING on` reads (`EXISTS`) every key a fetch
//! depends on (each queue, its busy list and its two limits), and Redis sends
//! it an `invalidate` message when one of them is next written, by anyone: a
//! client's `LPUSH`, another process's acknowledgement, a limit change, a
//! reaper. Nothing is consumed and nothing is polled.
//!
//! A key stays tracked only until its first write, so each message "rings"
//! once and disarms the bell; the next fetcher that needs to wait arms it
//! again. A ring count orders it all: a ticket taken while the bell is armed
//! at ring `n` proves that any write after the fetch that follows rings `n+1`.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, MutexGuard};
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, ConnectionInfo, PushInfo, PushKind};
use tokio::sync::Notify;

use crate::connection::RoundTrips;
use crate::{keys, Error, Result};

/// How long an observation "these queues hold nothing we may take" stands
/// without a ring before a fetcher checks again: a backstop in case a message
/// was lost, which costs one fetch per capsule per period.
const TRUST_EMPTY: Duration = Duration::from_secs(2);

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

/// A proof that the bell was armed at ring `n` for a set of queues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ticket(u64);

/// How a wait for the bell ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Woken {
    /// It rang (or another fetcher passed its turn on).
    Rang,
    /// The deadline passed.
    TimedOut,
    /// The capsule is quieting: stop waiting, fetch no more.
    Closed,
}

#[derive(Default)]
struct State {
    pid: u32,
    rings: u64,
    /// The ring count at which every key of `queues` was last read.
    armed_at: Option<u64>,
    queues: BTreeSet<String>,
    sets: HashSet<QueueSet>,
    /// A fetch that started at this ring found nothing for this set.
    empty: Option<(u64, QueueSet, Instant)>,
    retry_at: Option<Instant>,
    closed: bool,
}

struct Shared {
    state: Mutex<State>,
    notify: Notify,
}

impl Shared {
    /// This process's state: a forked child's bell starts disarmed.
    fn state(&self) -> MutexGuard<'_, State> {
        let mut state = self.state.lock();
        let pid = std::process::id();
        if state.pid != pid {
            *state = State {
                pid,
                closed: state.closed,
                ..State::default()
            };
        }
        state
    }

    fn ring(&self) {
        self.state().rings += 1;
        // One fetcher looks; if it finds a job it passes the turn on (see
        // `Doorbell::pass`), so a burst wakes as many as it feeds.
        self.notify.notify_one();
    }
}

type Slot = Arc<tokio::sync::Mutex<Option<MultiplexedConnection>>>;

pub(crate) struct Doorbell {
    info: ConnectionInfo,
    config: AsyncConnectionConfig,
    shared: Arc<Shared>,
    bound: Mutex<Option<(u32, Slot)>>,
    trips: RoundTrips,
}

impl Doorbell {
    /// `info` must ask for RESP3: invalidations arrive as push messages.
    pub(crate) fn new(info: ConnectionInfo, timeout: Duration, trips: RoundTrips) -> Self {
        let shared = Arc::new(Shared {
            state: Mutex::default(),
            notify: Notify::new(),
        });
        let listener = shared.clone();
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(timeout)
            .set_response_timeout(timeout)
            .set_push_sender(move |push: PushInfo| {
                // A lost connection forgets what it tracked: ring, so that
                // the next waiter arms a new one.
                if matches!(push.kind, PushKind::Invalidate | PushKind::Disconnection) {
                    listener.ring();
                }
                Ok::<(), std::convert::Infallible>(())
            });
        Self {
            info,
            config,
            shared,
            bound: Mutex::new(None),
            trips,
        }
    }

    /// A ticket if the bell is armed for `set`, else `None` (arm it first).
    pub(crate) fn ticket(&self, set: QueueSet) -> Option<Ticket> {
        let state = self.shared.state();
        (state.armed_at == Some(state.rings) && state.sets.contains(&set))
            .then_some(Ticket(state.rings))
    }

    /// True if a fetch for `set` that started under `ticket` found nothing,
    /// recently: nothing it depends on has changed since, so neither would
    /// the result.
    pub(crate) fn known_empty(&self, ticket: Ticket, set: QueueSet) -> bool {
        let state = self.shared.state();
        matches!(state.empty, Some((ring, s, at)) if ring == ticket.0 && s == set && at.elapsed() < TRUST_EMPTY)
    }

    pub(crate) fn found_empty(&self, ticket: Ticket, set: QueueSet) {
        self.shared.state().empty = Some((ticket.0, set, Instant::now()));
    }

    /// Wakes another waiter: a woken fetcher that found a job may not have
    /// found the only one.
    pub(crate) fn pass(&self) {
        self.shared.notify.notify_one();
    }

    /// Ends every wait, now and later: the capsule is quieting.
    pub(crate) fn close(&self) {
        self.shared.state().closed = true;
        self.shared.notify.notify_waiters();
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.shared.state().closed
    }

    /// Waits until the bell rings after `ticket`, `deadline` passes, or the
    /// capsule quiets.
    pub(crate) async fn wait(&self, ticket: Ticket, deadline: tokio::time::Instant) -> Woken {
        let notified = self.shared.notify.notified();
        tokio::pin!(notified);
        // Registered before the check: a ring in between is not missed.
        notified.as_mut().enable();
        {
            let state = self.shared.state();
            if state.closed {
                return Woken::Closed;
            }
            if state.rings != ticket.0 {
                return Woken::Rang;
            }
        }
        tokio::select! {
            _ = &mut notified => if self.is_closed() { Woken::Closed } else { Woken::Rang },
            _ = tokio::time::sleep_until(deadline) => Woken::TimedOut,
        }
    }

    /// Reads every key fetches of `queues` depend on, so that Redis tracks
    /// them. `Ok(false)` if the bell rang meanwhile: the caller fetches
    /// again (something changed) and arms again. Fails fast while a recent
    /// failure stands: the caller polls instead.
    pub(crate) async fn arm(&self, queues: &[String]) -> Result<bool> {
        let set = queue_set(queues);
        let (before, keys) = {
            let mut state = self.shared.state();
            if state.retry_at.is_some_and(|at| Instant::now() < at) {
                return Err(Error::Connection("the doorbell is unavailable".into()));
            }
            state.queues.extend(queues.iter().cloned());
            state.sets.insert(set);
            (state.rings, tracked_keys(&state.queues))
        };
        match self.read(&keys).await {
            Ok(()) => {
                let mut state = self.shared.state();
                state.retry_at = None;
                let quiet = state.rings == before;
                if quiet {
                    state.armed_at = Some(before);
                }
                Ok(quiet)
            }
            Err(err) => {
                let pause = match err {
                    Error::Command(_) => RETRY_AFTER_REFUSAL,
                    _ => RETRY_AFTER_FAILURE,
                };
                self.shared.state().retry_at = Some(Instant::now() + pause);
                Err(err)
            }
        }
    }

    /// `EXISTS` on the tracking connection, opening it (again) if needed.
    async fn read(&self, keys: &[String]) -> Result<()> {
        let slot = self.slot();
        let mut conn = slot.lock().await;
        for attempt in 0..2 {
            if conn.is_none() {
                *conn = Some(self.connect().await?);
            }
            let Some(c) = conn.as_mut() else { continue };
            self.trips.add(1);
            match redis::cmd("EXISTS").arg(keys).query_async::<i64>(c).await {
                Ok(_) => return Ok(()),
                // A connection Redis closed (a restart): one more try on a new one.
                Err(err) if attempt == 0 && (err.is_io_error() || err.is_connection_dropped()) => {
                    *conn = None;
                }
                Err(err) => {
                    *conn = None;
                    return Err(err.into());
                }
            }
        }
        Err(Error::Connection("the doorbell could not reconnect".into()))
    }

    async fn connect(&self) -> Result<MultiplexedConnection> {
        let client = redis::Client::open(self.info.clone())?;
        // HELLO (with AUTH and SELECT in its pipeline), then CLIENT TRACKING.
        self.trips.add(2);
        let mut conn = client
            .get_multiplexed_async_connection_with_config(&self.config)
            .await?;
        redis::cmd("CLIENT")
            .arg("TRACKING")
            .arg("ON")
            .query_async::<()>(&mut conn)
            .await?;
        Ok(conn)
    }

    /// The tracking connection of this process: a forked child opens its own.
    fn slot(&self) -> Slot {
        let pid = std::process::id();
        let mut bound = self.bound.lock();
        match bound.as_ref() {
            Some((owner, slot)) if *owner == pid => slot.clone(),
            _ => {
                if let Some(stale) = bound.take() {
                    // The parent's socket is the parent's to use and close.
                    std::mem::forget(stale);
                }
                let slot = Slot::default();
                *bound = Some((pid, slot.clone()));
                slot
            }
        }
    }
}

fn tracked_keys(queues: &BTreeSet<String>) -> Vec<String> {
    queues
        .iter()
        .flat_map(|q| {
            [
                keys::queue(q),
                keys::busy(q),
                keys::limit(q),
                keys::process_limit(q),
            ]
        })
        .collect()
}
