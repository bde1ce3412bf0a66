//! One Sidekiq capsule's view of the limits: its UUID, its busy slots and
//! in-progress jobs, and the bookkeeping that keeps Redis in step with the
//! jobs it runs. All of `impl Capsule` is in this folder:
//!
//! - `retrieve.rs`: retrieving work ([`Fetch`]: look, arm the doorbell, wait);
//! - `look.rs`: a look, one run of the fetch script, as a task on the
//!   runtime's connection or, through `direct_look.rs`, on the thread's own
//!   (`abandoned.rs`: one whose caller walked away during a hand-over);
//! - `acks.rs`: books what a look did, sends acknowledgements and pushed-back
//!   jobs;
//! - `beat.rs`: the heartbeat and what it does besides; `continuity.rs`:
//!   whether the beats went on without a break;
//! - `registration.rs`: registering and deregistering;
//! - `heal.rs`: reconciling Redis with the ledger, at each beat and on a new
//!   master;
//! - `wake_time.rs`: when the first window opens, read again for the
//!   doorbell after a message said only that it moved.
//!
//! The administration without a capsule is admin/'s; a capsule delegates
//! its own to one over its connection.

mod abandoned;
mod acks;
mod back_off;
mod beat;
mod continuity;
mod direct_look;
mod hand_over;
mod heal;
mod look;
mod registration;
mod retrieve;
mod wake_time;

use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::{MappedMutexGuard, Mutex, MutexGuard};
use tokio::sync::RwLock;

use crate::admin::Limits;
use crate::connection::{Redis, RoundTrips};
use crate::doorbell::Doorbell;
use crate::ledger::Ledger;
use crate::process::{ForkLocal, Stale};
use crate::reaper::Reaper;
use crate::script::fetch::{Discarded, FetchScript};
use crate::script::{LuaScript, RECONCILE, REQUEUE};
use crate::{direct, ConnectionSettings, Interrupt, LimitKind, Rate, Result};

pub use beat::BeatReport;
pub use heal::Rebooked;
pub use retrieve::{Fetch, Wait};

/// How a capsule runs, besides where Redis is.
#[derive(Debug, Clone, Copy)]
pub struct CapsuleOptions {
    /// Seconds between heartbeats; a capsule silent for 4 periods is dead.
    pub heartbeat_period: Duration,
    /// Recoveries from dead capsules a job may have; one more sends it to
    /// the dead set.
    pub max_recoveries: u32,
    /// Jobs at a full job limit one fetch may set aside (park or discard)
    /// before it stops and looks again.
    pub lookahead: u32,
    /// How long an acknowledgement waits for the capsule's next fetch to
    /// carry it before it is sent on its own.
    pub ack_grace: Duration,
}

impl Default for CapsuleOptions {
    fn default() -> Self {
        Self {
            heartbeat_period: Duration::from_secs(15),
            max_recoveries: 3,
            lookahead: 100,
            ack_grace: Duration::from_millis(2),
        }
    }
}

struct Inner {
    uuid: String,
    /// Tells this capsule's direct connections from other capsules' on a thread.
    id: u64,
    settings: ConnectionSettings,
    /// The doorbell's tracking connection: its writes disarm the bell.
    redis: Arc<Redis>,
    doorbell: Arc<Doorbell>,
    limits: Limits,
    heartbeat_ttl: u64,
    /// Between two beats.
    period: Duration,
    /// Whether the beats went on without a break (see beat.rs).
    continuity: Mutex<continuity::Continuity>,
    /// Behind sentinels, the generation of the last master the capsule was
    /// healed on (see `Inner::heal`), and one healing at a time.
    healed: AtomicU64,
    healing: tokio::sync::Mutex<()>,
    /// Limits and rates from the configuration, as keys and values,
    /// written again if Redis loses its data.
    defaults: Mutex<Vec<(String, String)>>,
    default_rates: Mutex<Vec<(String, String)>>,
    default_ranges: Mutex<Vec<(String, String)>>,
    /// What the capsule says of itself for the control plane, written at
    /// each registration (see `keys::capsule_info`).
    info: Mutex<Option<String>>,
    /// The queues it fetches from, whose busy lists each beat looks in for
    /// slots of capsules neither registered nor beating.
    served: Mutex<Vec<String>>,
    /// How long a caller waits for a reply (Sidekiq's `timeout`).
    timeout: Duration,
    /// See `CapsuleOptions::ack_grace`.
    ack_grace: Duration,
    /// A forked child starts with an empty one, as it holds none of its
    /// parent's jobs and owes none of its acknowledgements.
    ledger: Mutex<ForkLocal<Ledger>>,
    /// Every script that changes this capsule's entries holds it shared for
    /// its round trip; reconciliation holds it alone, so the ledger it reads
    /// matches what Redis holds when its script runs.
    gate: Arc<RwLock<()>>,
    fetch: FetchScript,
    requeue: LuaScript,
    reconcile: LuaScript,
    reaper: Reaper,
    /// Jobs fetches discarded, until a caller takes them for the app (its
    /// discard handlers): held here when the fetching thread walked away.
    discarded: Mutex<Vec<Discarded>>,
    /// Where the next beat goes on with its sweep of parked jobs' limits
    /// (`SSCAN` cursor).
    sweep: Mutex<u64>,
    /// Redis's clock less this process's, in milliseconds, as the last
    /// registration's `TIME` showed it: what a registration adds to its
    /// own clock to score its entry in `keys::BEATS` by Redis's (none
    /// before the first registration: its own clock then).
    clock_offset_ms: Mutex<Option<i64>>,
    /// A registration said in `keys::FORMATS` the highest data format this
    /// capsule speaks (see `Inner::register`).
    format_said: AtomicBool,
    /// Where this capsule's next census goes on with its walk over
    /// capsules' queue sets (`SCAN` cursor; see `Reaper::sweep_stray_queues`).
    strays: Mutex<u64>,
    /// Hand-overs sent (see hand_over/).
    hand_overs: RoundTrips,
}

impl Inner {
    /// Seconds a capsule found holding slots while neither registered nor
    /// beating is left alone: two heartbeat expiries. A live capsule
    /// registers again at its next beat, one period after it resumed.
    fn grace(&self) -> u64 {
        self.heartbeat_ttl * 2
    }

    /// The ledger of this process.
    fn ledger(&self) -> MappedMutexGuard<'_, Ledger> {
        MutexGuard::map(self.ledger.lock(), ForkLocal::get)
    }
}

/// A capsule's handle on Redis. Cheap to clone; every method blocks the
/// calling thread (not the runtime) and returns early if `interrupt` fires.
#[derive(Clone)]
pub struct Capsule {
    inner: Arc<Inner>,
}

impl Capsule {
    /// A capsule with a fresh UUID. Opens no connection yet.
    pub fn new(settings: &ConnectionSettings, options: CapsuleOptions) -> Self {
        let period = options.heartbeat_period.as_secs_f64();
        let doorbell = Arc::new(Doorbell::default());
        let (listener, writes) = (doorbell.clone(), doorbell.clone());
        static IDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let inner = Arc::new_cyclic(|me: &Weak<Inner>| {
            let (me, heard) = (me.clone(), me.clone());
            let redis = Arc::new(
                Redis::new(settings, move |push| {
                    if listener.hear(push) {
                        Inner::read_wake_time(&heard);
                    }
                })
                .on_write(move || writes.wrote())
                .on_new_master(move || Inner::followed(&me)),
            );
            Inner {
                uuid: uuid::Uuid::new_v4().to_string(),
                id: IDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
                settings: settings.clone(),
                doorbell,
                limits: Limits::over(redis.clone(), settings.timeout),
                redis,
                timeout: settings.timeout,
                ack_grace: options.ack_grace,
                defaults: Mutex::default(),
                default_rates: Mutex::default(),
                default_ranges: Mutex::default(),
                info: Mutex::default(),
                served: Mutex::default(),
                heartbeat_ttl: (period * 4.0).ceil().max(1.0) as u64,
                period: options.heartbeat_period,
                continuity: Mutex::default(),
                healed: AtomicU64::new(0),
                healing: tokio::sync::Mutex::new(()),
                ledger: Mutex::new(ForkLocal::new(Ledger::default(), Stale::Drop)),
                gate: Arc::new(RwLock::new(())),
                fetch: FetchScript::new(options.lookahead),
                requeue: LuaScript::new(REQUEUE),
                reconcile: LuaScript::new(RECONCILE),
                reaper: Reaper::new(options.max_recoveries),
                discarded: Mutex::default(),
                sweep: Mutex::default(),
                clock_offset_ms: Mutex::default(),
                format_said: AtomicBool::new(false),
                strays: Mutex::default(),
                hand_overs: RoundTrips::default(),
            }
        });
        Self { inner }
    }

    pub fn uuid(&self) -> &str {
        &self.inner.uuid
    }

    /// True if the calling thread has a connection of its own to this
    /// capsule's Redis, which its looks use (see direct/).
    pub fn has_own_connection(&self) -> bool {
        direct::has(self.inner.id, self.inner.redis.generation())
    }

    pub(crate) fn doorbell(&self) -> &Doorbell {
        &self.inner.doorbell
    }

    /// Round trips this capsule made to Redis so far, the doorbell's included.
    pub fn round_trips(&self) -> u64 {
        self.inner.redis.trips.get()
    }

    /// Of those, the hand-overs (fetches without the script, which may
    /// still have left the job to it).
    pub fn hand_overs(&self) -> u64 {
        self.inner.hand_overs.get()
    }

    pub(crate) fn timeout(&self) -> Duration {
        self.inner.timeout
    }

    /// The jobs this capsule's fetches discarded since the last call
    /// (`on_limit: :discard`), each payload with its limit, for the app's
    /// discard handlers: each is taken once.
    pub fn take_discarded(&self) -> Vec<Discarded> {
        let mut discarded = self.inner.discarded.lock();
        if discarded.is_empty() {
            return Vec::new();
        }
        std::mem::take(&mut *discarded)
    }

    /// Ends every waiting fetch at once, and makes later ones look without
    /// waiting: Sidekiq is quieting, and its idle processors should stop.
    pub fn quiet(&self) {
        self.inner.doorbell.close();
    }

    /// This capsule's limits administration, over its connection.
    pub fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    /// Writes limits only where Redis holds none yet, so that values changed
    /// at run time survive a restart. They are written again the same way if
    /// Redis later loses its data (see [`BeatReport::restored`]).
    pub fn set_default_limits(
        &self,
        limits: Vec<(String, LimitKind, u64)>,
        interrupt: &Interrupt,
    ) -> Result<()> {
        *self.inner.defaults.lock() = crate::admin::limit_defaults(&limits);
        self.inner.limits.set_default_limits(limits, interrupt)
    }

    /// Writes queues' rates as [`Capsule::set_default_limits`] writes limits.
    pub fn set_default_rates(
        &self,
        rates: Vec<(String, Rate)>,
        interrupt: &Interrupt,
    ) -> Result<()> {
        *self.inner.default_rates.lock() = crate::admin::rate_defaults(&rates);
        self.inner.limits.set_default_rates(rates, interrupt)
    }

    /// Writes queues' adaptive ranges (`(queue, floor, ceiling)`, the floor
    /// also a default limit) as [`Capsule::set_default_limits`] writes
    /// limits.
    pub fn set_default_ranges(
        &self,
        ranges: Vec<(String, u64, u64)>,
        interrupt: &Interrupt,
    ) -> Result<()> {
        *self.inner.default_ranges.lock() = crate::admin::range_defaults(&ranges);
        self.inner.limits.set_default_ranges(ranges, interrupt)
    }

    /// What this capsule says of itself to a control plane (opaque to the
    /// core: the Ruby side writes JSON), stored from the next registration
    /// or heartbeat on (see [`Limits::capsules`]).
    pub fn describe(&self, info: String) {
        *self.inner.info.lock() = Some(info);
    }

    /// The queues this capsule fetches from (bare names): from the next beat
    /// on, each beat frees the slots that capsules neither registered nor
    /// beating hold in their busy lists, once they have been so for
    /// [`Capsule::grace`] seconds, and pushes their in-progress jobs back.
    pub fn serve<S: AsRef<str>>(&self, queues: &[S]) {
        let mut names: Vec<String> = queues.iter().map(|q| q.as_ref().to_owned()).collect();
        names.sort();
        names.dedup();
        *self.inner.served.lock() = names;
    }

    /// Seconds a capsule found holding slots while neither registered nor
    /// beating is left alone before a beat reaps it: two heartbeat expiries
    /// (8 heartbeat periods).
    pub fn grace(&self) -> u64 {
        self.inner.grace()
    }

    /// Seconds the heartbeat key lives: 4 heartbeat periods.
    pub fn heartbeat_ttl(&self) -> u64 {
        self.inner.heartbeat_ttl
    }
}
