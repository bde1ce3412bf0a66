//! One Sidekiq capsule's view of the limits: its UUID, its busy slots and
//! in-progress jobs, and the bookkeeping that keeps Redis in step with the
//! jobs it runs.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use parking_lot::{MappedMutexGuard, Mutex, MutexGuard};
use tokio::sync::{OwnedRwLockReadGuard, RwLock};

use crate::connection::{Conn, Redis};
use crate::direct::{self, Direct, Flight};
use crate::doorbell::Doorbell;
use crate::fetch::{Fetch, Wait};
use crate::ledger::{Ack, Digest, Ledger};
use crate::process::{ForkLocal, Stale};
use crate::reaper;
use crate::runtime::{run_plain, spawn, Pending};
use crate::selector::{LuaScript, FETCH, REAP, RECONCILE, REQUEUE};
use crate::{keys, ConnectionSettings, Interrupt, LimitKind, LimitValue, Result};

/// How long an acknowledgement waits for its capsule's next fetch to carry
/// it before it is sent on its own. A processor fetches again right after it
/// acknowledges, so on a busy capsule it rides along for free; the slot it
/// frees is held this much longer at most.
const ACK_GRACE: Duration = Duration::from_millis(2);

/// After a failed flush, the next attempt (unless a fetch carries it first).
const ACK_RETRY: Duration = Duration::from_secs(1);

/// A job taken from a queue, with a busy slot booked for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// The queue's name, without Sidekiq's `queue:` prefix.
    pub queue: String,
    pub job: Vec<u8>,
}

/// A job that a reaper or a reconciliation acted on: (queue, jid, class).
/// `jid` and `class` read "?" when the payload is not a JSON object.
pub type JobRef = (String, String, String);

/// What one run of the fetch script found.
#[derive(Debug, Default)]
pub(crate) struct Look {
    pub(crate) fetched: Option<Fetched>,
    /// Another job is eligible for this capsule after this one.
    pub(crate) more: bool,
}

impl Look {
    /// The fetch script's reply as it came off a connection.
    fn from_value(value: redis::Value) -> Result<Self> {
        if let redis::Value::ServerError(err) = value {
            return Err(redis::RedisError::from(err).into());
        }
        let reply: Option<(String, Vec<u8>, i64)> =
            redis::FromRedisValue::from_owned_redis_value(value)?;
        Ok(Self::from_reply(reply))
    }

    fn from_reply(reply: Option<(String, Vec<u8>, i64)>) -> Self {
        match reply {
            Some((queue, job, more)) => Look {
                fetched: Some(Fetched { queue, job }),
                more: more == 1,
            },
            None => Look::default(),
        }
    }
}

/// What a fetch script does for the doorbell (see fetch.lua's ARGV[2]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Nobody sleeps on the doorbell: just fetch.
    Plain,
    /// On a thread's own connection while fetchers sleep: also report
    /// whether another job is eligible. Redis rings for its writes.
    Report,
    /// On the tracking connection while fetchers sleep: also read again
    /// what it writes, whose tracking its own writes end in silence.
    Watch,
    /// Arming the doorbell: read what fetches depend on, take nothing.
    Track,
}

impl Mode {
    fn arg(self) -> &'static [u8] {
        match self {
            Mode::Plain => b"0",
            Mode::Watch => b"1",
            Mode::Report => b"2",
            Mode::Track => b"t",
        }
    }
}

/// A look under way: on the runtime's connection, or on the thread's own.
pub(crate) enum LookPending {
    Task(Pending<Look>),
    Direct(DirectLook),
}

impl LookPending {
    pub(crate) fn wait(&mut self, interrupt: &Interrupt) -> Result<Look> {
        match self {
            LookPending::Task(pending) => pending.wait(interrupt),
            LookPending::Direct(direct) => match direct.finish(interrupt) {
                // A connection found broken (a Redis restart) before any
                // reply: the look goes again through the runtime's
                // connection, which reconnects.
                Err(crate::Error::Connection(_)) if direct.lost => {
                    let capsule = Capsule {
                        inner: direct.inner.clone(),
                    };
                    *self = LookPending::Task(capsule.start_task_look(&direct.queues, false)?);
                    self.wait(interrupt)
                }
                other => other,
            },
        }
    }

    /// The reply is here and is a look's: waiting for it will not block.
    pub(crate) fn is_ready(&self) -> bool {
        matches!(self, LookPending::Direct(direct) if direct.is_ready())
    }
}

/// A look on the calling thread's own connection (see direct.rs). Dropped
/// before its reply was taken, it is finished on the runtime, and a job in
/// the reply goes back to its queue.
pub(crate) struct DirectLook {
    inner: Arc<Inner>,
    queues: Arc<Vec<String>>,
    flight: Option<Flight>,
    mode: Mode,
    acks: Vec<Ack>,
    /// Shared hold on the gate until the reply is settled (see `Inner::gate`).
    gate: Option<OwnedRwLockReadGuard<()>>,
    deadline: std::time::Instant,
    /// The script was sent in full after Redis had lost it (NOSCRIPT).
    resent: bool,
    /// The connection broke before a reply came.
    lost: bool,
}

impl DirectLook {
    /// Sends the fetch script on this thread's connection, if it has one and
    /// no reconciliation holds the gate; reads a reply already there.
    fn start(inner: &Arc<Inner>, queues: &Arc<Vec<String>>, mode: Mode) -> Option<DirectLook> {
        let gate = inner.gate.clone().try_read_owned().ok()?;
        let conn = direct::take(inner.id)?;
        let acks = inner.ledger().take_acks(Some(std::thread::current().id()));
        let request = inner
            .fetch
            .packed_evalsha(&inner.fetch_args(&acks, queues, mode));
        inner.redis.trips.add(1);
        Some(DirectLook {
            inner: inner.clone(),
            queues: queues.clone(),
            flight: Some(Flight::start(conn, request, 1)),
            mode,
            acks,
            gate: Some(gate),
            deadline: std::time::Instant::now() + inner.timeout,
            resent: false,
            lost: false,
        })
    }

    fn is_ready(&self) -> bool {
        self.flight.as_ref().is_some_and(Flight::is_ready_value)
    }

    fn finish(&mut self, interrupt: &Interrupt) -> Result<Look> {
        let Some(flight) = self.flight.as_mut() else {
            return Err(crate::Error::Connection(
                "the reply was already taken".into(),
            ));
        };
        let value = match flight.finish(interrupt, self.deadline) {
            Err(crate::Error::Interrupted) => return Err(crate::Error::Interrupted),
            // Timed out: dropping this look finishes it on the runtime, and a
            // job in the late reply goes back.
            Err(err) if flight.is_alive() => return Err(err),
            Ok(redis::Value::ServerError(e)) if e.code() == "NOSCRIPT" && !self.resent => {
                let conn = self.flight.take().and_then(Flight::into_conn);
                let Some(conn) = conn else {
                    return self.settle(Err(crate::Error::Connection("lost".into())));
                };
                let args = self.inner.fetch_args(&self.acks, &self.queues, self.mode);
                self.flight = Some(Flight::start(conn, self.inner.fetch.packed_eval(&args), 1));
                self.inner.redis.trips.add(1);
                self.resent = true;
                return self.finish(interrupt);
            }
            other => other,
        };
        let flight = self.flight.take();
        let reply = match value {
            Ok(value) => {
                if let Some(conn) = flight.and_then(Flight::into_conn) {
                    direct::put(self.inner.id, conn);
                }
                Look::from_value(value)
            }
            // Broken before a reply: the script did not run, or if Redis
            // ran it and died before answering, the next reconciliation
            // pushes the job it took back.
            Err(err) => {
                self.lost = true;
                Err(err)
            }
        };
        self.settle(reply)
    }

    fn settle(&mut self, reply: Result<Look>) -> Result<Look> {
        // Its writes were another connection's to the doorbell's: Redis rings
        // for those a sleeping fetcher tracks.
        let settled = self
            .inner
            .settle(std::mem::take(&mut self.acks), reply, false);
        self.gate = None;
        settled
    }
}

impl Drop for DirectLook {
    fn drop(&mut self) {
        let Some(flight) = self.flight.take() else {
            return;
        };
        let inner = self.inner.clone();
        let acks = std::mem::take(&mut self.acks);
        let gate = self.gate.take();
        flight.abandon(move |value| {
            let reply = value.and_then(Look::from_value);
            let settled = inner.settle(acks, reply, false);
            drop(gate);
            if let Ok(Look {
                fetched: Some(f), ..
            }) = settled
            {
                if let Ok(handle) = crate::runtime::handle() {
                    handle.spawn(async move {
                        let _ = inner.requeue(vec![(f.queue, f.job)]).await;
                    });
                }
            }
        });
    }
}

/// A dead capsule this beat reaped.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Reaped {
    pub uuid: String,
    /// Busy slots freed.
    pub freed: i64,
    /// In-progress jobs pushed back to the front of their queues.
    pub requeued: i64,
    /// Jobs recovered more than `max_recoveries` times, now in the dead set.
    pub dead: Vec<JobRef>,
}

/// What a heartbeat did besides proving this capsule alive.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct BeatReport {
    pub reaped: Vec<Reaped>,
    /// This capsule's busy lists it corrected: (busy key, entries before, after).
    pub corrected: Vec<(String, i64, i64)>,
    /// Jobs in this capsule's in-progress lists that it does not hold (the
    /// reply of their fetch was lost), pushed back: (queue, jid).
    pub orphans: Vec<(String, String)>,
    /// The capsule's heartbeat key was gone before its period was up: Redis
    /// lost its data (or reaped a frozen process). The beat registered the
    /// capsule again and wrote the configured limits where none are set.
    pub restored: bool,
}

/// A limit as Redis holds it, unparsed: a value written by hand may not be
/// a number (the fetch then reads it as 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredLimit {
    pub queue: String,
    pub kind: LimitKind,
    pub key: String,
    /// `None` when no limit is set; not valid UTF-8 is replaced lossily.
    pub raw: Option<String>,
}

/// How a capsule runs, besides where Redis is.
#[derive(Debug, Clone, Copy)]
pub struct CapsuleOptions {
    /// Seconds between heartbeats; a capsule silent for 4 periods is dead.
    pub heartbeat_period: Duration,
    /// Recoveries from dead capsules a job may have; one more sends it to
    /// the dead set.
    pub max_recoveries: u32,
}

impl Default for CapsuleOptions {
    fn default() -> Self {
        Self {
            heartbeat_period: Duration::from_secs(15),
            max_recoveries: 3,
        }
    }
}

pub(crate) struct Inner {
    pub(crate) uuid: String,
    /// Tells this capsule's direct connections from other capsules' on a thread.
    id: u64,
    settings: ConnectionSettings,
    pub(crate) redis: Redis,
    doorbell: Arc<Doorbell>,
    heartbeat_ttl: u64,
    pub(crate) max_recoveries: u32,
    /// Limits from the configuration, written again if Redis loses its data.
    defaults: Mutex<Vec<(String, LimitKind, u64)>>,
    /// How long a caller waits for a reply (Sidekiq's `timeout`).
    timeout: Duration,
    /// A forked child starts with an empty one, as it holds none of its
    /// parent's jobs and owes none of its acknowledgements.
    ledger: Mutex<ForkLocal<Ledger>>,
    /// Every script that changes this capsule's entries holds it shared for
    /// its round trip; reconciliation holds it alone, so the ledger it reads
    /// matches what Redis holds when its script runs.
    gate: Arc<RwLock<()>>,
    fetch: LuaScript,
    requeue: LuaScript,
    pub(crate) reap: LuaScript,
    reconcile: LuaScript,
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
        let listener = doorbell.clone();
        let redis = Redis::new(settings, move |push| listener.hear(push));
        static IDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let inner = Inner {
            uuid: uuid::Uuid::new_v4().to_string(),
            id: IDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            settings: settings.clone(),
            doorbell,
            redis,
            timeout: settings.timeout,
            defaults: Mutex::default(),
            heartbeat_ttl: (period * 4.0).ceil().max(1.0) as u64,
            max_recoveries: options.max_recoveries,
            ledger: Mutex::new(ForkLocal::new(Ledger::default(), Stale::Drop)),
            gate: Arc::new(RwLock::new(())),
            fetch: LuaScript::new(FETCH),
            requeue: LuaScript::new(REQUEUE),
            reap: LuaScript::new(REAP),
            reconcile: LuaScript::new(RECONCILE),
        };
        Self {
            inner: Arc::new(inner),
        }
    }

    pub fn uuid(&self) -> &str {
        &self.inner.uuid
    }

    /// Takes a job from the first eligible queue of `queues` (names, with or
    /// without Sidekiq's `queue:` prefix), or `None` if none is eligible and
    /// non-empty. Sends the capsule's pending acknowledgements on the way. If
    /// interrupted after Redis handed out a job, the job goes back to the
    /// front of its queue and its slot is freed. Does not wait: see
    /// [`Capsule::start_fetch`].
    pub fn fetch<S: AsRef<str>>(
        &self,
        queues: &[S],
        interrupt: &Interrupt,
    ) -> Result<Option<Fetched>> {
        if interrupt.is_triggered() {
            return Err(crate::Error::Interrupted);
        }
        self.start_fetch(queues, Wait::NONE)?.wait(interrupt)
    }

    /// [`Capsule::fetch`] that, when nothing is eligible, waits up to
    /// `wait.timeout` for a job or a slot to appear. Its first look starts
    /// now; the caller waits with [`Fetch::wait`], again after an interrupt
    /// that it chose to ignore. Dropping the `Fetch` gives back a job that
    /// arrives after that.
    pub fn start_fetch<S: AsRef<str>>(&self, queues: &[S], wait: Wait) -> Result<Fetch> {
        let queues = queues
            .iter()
            .map(|q| {
                let q = q.as_ref();
                q.strip_prefix("queue:").unwrap_or(q).to_owned()
            })
            .collect();
        let mut fetch = Fetch::new(self.clone(), queues, wait);
        fetch.begin()?;
        Ok(fetch)
    }

    /// One run of the fetch script; `watch`: a fetcher sleeps on the
    /// doorbell (see fetch.lua). On the thread's own connection if it has
    /// one: its writes ring the doorbell through Redis, and only those that
    /// change what a sleeping fetcher may take (an acknowledgement whose slot
    /// the same fetch takes again writes no busy list).
    pub(crate) fn start_look(&self, queues: &Arc<Vec<String>>, watch: bool) -> Result<LookPending> {
        let mode = if watch { Mode::Report } else { Mode::Plain };
        if let Some(direct) = DirectLook::start(&self.inner, queues, mode) {
            return Ok(LookPending::Direct(direct));
        }
        self.start_task_look(queues, watch).map(LookPending::Task)
    }

    fn start_task_look(&self, queues: &Arc<Vec<String>>, watch: bool) -> Result<Pending<Look>> {
        let queues = queues.clone();
        let inner = self.inner.clone();
        let undo_inner = self.inner.clone();
        // Taken now rather than when the task runs: until the I/O thread got
        // to it, a flush firing meanwhile would send them on their own.
        let acks = self
            .inner
            .ledger()
            .take_acks(Some(std::thread::current().id()));
        spawn(
            self.inner.timeout,
            async move { inner.fetch(&queues, watch, acks).await },
            |abandoned: Look| async move {
                if let Some(f) = abandoned.fetched {
                    let _ = undo_inner.requeue(vec![(f.queue, f.job)]).await;
                }
            },
        )
    }

    /// True if the calling thread has a connection of its own to this
    /// capsule's Redis, which its looks use (see direct.rs).
    pub fn has_own_connection(&self) -> bool {
        direct::has(self.inner.id)
    }

    /// Opens this thread's direct connection if it has none (and the last
    /// attempt is not too recent): the thread's next looks go through it.
    pub(crate) fn open_direct(&self, interrupt: &Interrupt) {
        if !Direct::supports(&self.inner.settings) || !direct::wanted(self.inner.id) {
            return;
        }
        let settings = self.inner.settings.clone();
        let timeout = self.inner.timeout;
        let opened = run_plain(interrupt, timeout, async move {
            Direct::connect(&settings).await
        })
        .and_then(|conn| conn.set_up(&self.inner.settings, interrupt));
        self.inner.redis.trips.add(1);
        direct::opened(self.inner.id, opened.ok());
    }

    /// Arms the doorbell for `queues` (see `Inner::arm`).
    pub(crate) async fn arm(&self, queues: &[String]) -> Result<bool> {
        self.inner.arm(queues).await
    }

    pub(crate) fn doorbell(&self) -> &Doorbell {
        &self.inner.doorbell
    }

    /// Round trips this capsule made to Redis so far, the doorbell's included.
    pub fn round_trips(&self) -> u64 {
        self.inner.redis.trips.get()
    }

    pub(crate) fn timeout(&self) -> Duration {
        self.inner.timeout
    }

    /// True while acknowledgements wait for a fetch to carry them.
    pub(crate) fn owes_acks(&self) -> bool {
        self.inner.ledger().owes(std::thread::current().id())
    }

    /// Ends every waiting fetch at once, and makes later ones look without
    /// waiting: Sidekiq is quieting, and its idle processors should stop.
    pub fn quiet(&self) {
        self.inner.doorbell.close();
    }

    /// Puts a fetched job back at the front of its queue and frees its slot,
    /// without waiting: for a caller that must drop a job it already holds
    /// (its thread is being killed).
    pub fn give_back(&self, fetched: Fetched) {
        let inner = self.inner.clone();
        if let Ok(handle) = crate::runtime::handle() {
            handle.spawn(async move {
                let _ = inner.requeue(vec![(fetched.queue, fetched.job)]).await;
            });
        }
    }

    /// Marks a fetched job of `queue` finished. Returns at once: the removal
    /// from its in-progress list and the release of its slot ride on the
    /// capsule's next fetch, or go on their own within [`ACK_GRACE`]. Until
    /// Redis has them, the slot counts as busy (never the other way round).
    pub fn acknowledge(&self, queue: &str, job: Vec<u8>) {
        let queue = queue.strip_prefix("queue:").unwrap_or(queue).to_owned();
        let digest = Digest::of(&job);
        let schedule = {
            let mut ledger = self.inner.ledger();
            ledger.acks.push(Ack {
                queue,
                job,
                digest,
                thread: std::thread::current().id(),
            });
            !std::mem::replace(&mut ledger.flush_scheduled, true)
        };
        if schedule {
            self.inner.clone().schedule_flush(ACK_GRACE);
        }
    }

    /// Sends pending acknowledgements now.
    pub fn flush(&self, interrupt: &Interrupt) -> Result<()> {
        let inner = self.inner.clone();
        run_plain(
            interrupt,
            self.inner.timeout,
            async move { inner.flush().await },
        )
    }

    /// Puts unfinished jobs back at the front of their queues and frees
    /// their slots, in one atomic step. `jobs` are (queue name, payload).
    pub fn requeue(&self, jobs: Vec<(String, Vec<u8>)>, interrupt: &Interrupt) -> Result<()> {
        let inner = self.inner.clone();
        run_plain(interrupt, self.inner.timeout, async move {
            inner.requeue(jobs).await
        })
    }

    /// Proves this capsule alive, heals its busy and in-progress lists, and
    /// reaps capsules whose heartbeat expired, on every queue.
    pub fn beat(&self, interrupt: &Interrupt) -> Result<BeatReport> {
        let inner = self.inner.clone();
        run_plain(interrupt, self.inner.timeout * 4, async move {
            let restored = inner.register().await?;
            let (corrected, orphans) = inner.reconcile().await?;
            let reaped = reaper::reap_dead(&inner).await?;
            // Jobs pushed back and slots freed: a waiter may take them.
            inner.doorbell.wrote();
            Ok(BeatReport {
                reaped,
                corrected,
                orphans,
                restored,
            })
        })
    }

    /// Registers this capsule (heartbeat key and membership), as a beat does.
    pub fn register(&self, interrupt: &Interrupt) -> Result<()> {
        let inner = self.inner.clone();
        run_plain(interrupt, self.inner.timeout, async move {
            inner.register().await.map(|_| ())
        })
    }

    /// Removes this capsule after sending its pending acknowledgements: its
    /// heartbeat, its membership, every slot it still holds in `queues` or in
    /// any queue it fetched from, and its in-progress lists, whose jobs go
    /// back to their queues. Returns the number of slots freed.
    pub fn deregister<S: AsRef<str>>(&self, queues: &[S], interrupt: &Interrupt) -> Result<i64> {
        let inner = self.inner.clone();
        let names: Vec<String> = queues.iter().map(|q| q.as_ref().to_owned()).collect();
        run_plain(interrupt, self.inner.timeout * 4, async move {
            inner.flush().await?;
            let _exclusive = inner.gate.write().await;
            let mut names = names;
            names.extend(inner.ledger().queues().cloned());
            names.sort();
            names.dedup();
            let reaped = reaper::reap_one(
                &inner,
                &inner.uuid,
                names.iter().map(|q| keys::busy(q)),
                true,
            )
            .await?;
            Ok(reaped.map_or(0, |r| r.freed))
        })
    }

    pub fn limit(&self, queue: &str, kind: LimitKind, interrupt: &Interrupt) -> Result<LimitValue> {
        let inner = self.inner.clone();
        let key = kind.key(queue);
        run_plain(interrupt, self.inner.timeout, async move {
            let raw: Option<String> = redis::cmd("GET")
                .arg(key)
                .query_async(&mut inner.conn().await?)
                .await?;
            Ok(crate::limits::parse_stored(raw.as_deref()))
        })
    }

    /// Both limits of each of `queues`, as stored, in one `MGET`.
    pub fn stored_limits<S: AsRef<str>>(
        &self,
        queues: &[S],
        interrupt: &Interrupt,
    ) -> Result<Vec<StoredLimit>> {
        let mut limits: Vec<StoredLimit> = queues
            .iter()
            .flat_map(|q| {
                [LimitKind::Global, LimitKind::Process].map(|kind| StoredLimit {
                    queue: q.as_ref().to_owned(),
                    kind,
                    key: kind.key(q.as_ref()),
                    raw: None,
                })
            })
            .collect();
        if limits.is_empty() {
            return Ok(limits);
        }
        let inner = self.inner.clone();
        run_plain(interrupt, self.inner.timeout, async move {
            let mut mget = redis::cmd("MGET");
            for limit in &limits {
                mget.arg(&limit.key);
            }
            let raw: Vec<Option<Vec<u8>>> = mget.query_async(&mut inner.conn().await?).await?;
            for (limit, value) in limits.iter_mut().zip(raw) {
                limit.raw = value.map(|v| String::from_utf8_lossy(&v).into_owned());
            }
            Ok(limits)
        })
    }

    /// Sets (or with `None` removes) a limit; the next fetch obeys it.
    pub fn set_limit(
        &self,
        queue: &str,
        kind: LimitKind,
        value: LimitValue,
        interrupt: &Interrupt,
    ) -> Result<()> {
        let inner = self.inner.clone();
        let key = kind.key(queue);
        run_plain(interrupt, self.inner.timeout, async move {
            let mut conn = inner.conn().await?;
            match value {
                Some(v) => {
                    redis::cmd("SET")
                        .arg(key)
                        .arg(v)
                        .query_async::<()>(&mut conn)
                        .await?
                }
                None => {
                    redis::cmd("DEL")
                        .arg(key)
                        .query_async::<()>(&mut conn)
                        .await?
                }
            }
            // The capsule's own writes do not ring its bell.
            inner.doorbell.wrote();
            Ok(())
        })
    }

    /// Writes limits only where Redis holds none yet, so that values changed
    /// at run time survive a restart. They are written again the same way if
    /// Redis later loses its data (see [`BeatReport::restored`]).
    pub fn set_default_limits(
        &self,
        limits: Vec<(String, LimitKind, u64)>,
        interrupt: &Interrupt,
    ) -> Result<()> {
        *self.inner.defaults.lock() = limits;
        let inner = self.inner.clone();
        run_plain(interrupt, self.inner.timeout, async move {
            inner.write_defaults().await?;
            inner.doorbell.wrote();
            Ok(())
        })
    }

    /// Busy slots of `queue`: across all capsules, and this capsule's own.
    pub fn busy(&self, queue: &str, interrupt: &Interrupt) -> Result<(u64, u64)> {
        let inner = self.inner.clone();
        let key = keys::busy(queue);
        run_plain(interrupt, self.inner.timeout, async move {
            let (all, mine): (u64, Vec<u64>) = redis::pipe()
                .cmd("LLEN")
                .arg(&key)
                .cmd("LPOS")
                .arg(&key)
                .arg(&inner.uuid)
                .arg("COUNT")
                .arg(0)
                .query_async(&mut inner.conn().await?)
                .await?;
            Ok((all, mine.len() as u64))
        })
    }
}

impl Inner {
    pub(crate) async fn conn(&self) -> Result<Conn> {
        self.redis.conn().await
    }

    /// The ledger of this process.
    fn ledger(&self) -> MappedMutexGuard<'_, Ledger> {
        MutexGuard::map(self.ledger.lock(), ForkLocal::get)
    }

    /// The fetch script, carrying `acks` (taken from the ledger; they go
    /// back if the script fails). `watch`: a fetcher sleeps on the doorbell
    /// (see fetch.lua); otherwise a fetch that wrote disarms it.
    ///
    /// The acknowledgements may be taken before the gate: the ledger counts
    /// their jobs as held until Redis has them, as Redis does, so a
    /// reconciliation in between finds the two in step.
    async fn fetch(&self, queues: &[String], watch: bool, acks: Vec<Ack>) -> Result<Look> {
        let _shared = self.gate.read().await;
        let reply = self.invoke_fetch(&acks, queues, watch).await;
        self.settle(acks, reply, !watch)
    }

    /// Books what a fetch script did in the ledger and the doorbell.
    /// `silent`: it ran on the tracking connection without reading again
    /// what it wrote (see `Doorbell::wrote`).
    fn settle(&self, acks: Vec<Ack>, reply: Result<Look>, silent: bool) -> Result<Look> {
        // A fetch that wrote, or may have (a lost reply can hide a taken
        // job), without reading its keys again ended their tracking.
        let wrote_nothing = acks.is_empty() && matches!(&reply, Ok(Look { fetched: None, .. }));
        if silent && !wrote_nothing {
            self.doorbell.wrote();
        }
        let mut ledger = self.ledger();
        match &reply {
            Ok(look) => {
                for ack in &acks {
                    ledger.forget(&ack.queue, &ack.digest);
                }
                if let Some(f) = &look.fetched {
                    ledger.hold(&f.queue, Digest::of(&f.job));
                }
            }
            // Sent again later: acknowledging is idempotent.
            Err(_) => ledger.acks.splice(0..0, acks).for_each(drop),
        }
        reply
    }

    /// The fetch script's arguments (see fetch.lua).
    fn fetch_args(&self, acks: &[Ack], queues: &[String], mode: Mode) -> Vec<Vec<u8>> {
        let mut args: Vec<Vec<u8>> = Vec::with_capacity(3 + acks.len() * 3 + queues.len());
        args.push(self.uuid.as_bytes().to_vec());
        args.push(mode.arg().to_vec());
        args.push(acks.len().to_string().into_bytes());
        for ack in acks {
            args.push(ack.queue.as_bytes().to_vec());
            args.push(ack.job.clone());
            args.push(ack.digest.hex().into_bytes());
        }
        args.extend(queues.iter().map(|q| q.as_bytes().to_vec()));
        args
    }

    async fn invoke_fetch(&self, acks: &[Ack], queues: &[String], watch: bool) -> Result<Look> {
        let mode = if watch { Mode::Watch } else { Mode::Plain };
        let args = self.fetch_args(acks, queues, mode);
        let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        let mut conn = self.conn().await?;
        let reply: Option<(String, Vec<u8>, i64)> = if watch {
            self.fetch.invoke_tracked(&mut conn, &args[..]).await?
        } else {
            self.fetch
                .invoke(&mut conn, &[] as &[&str], &args[..])
                .await?
        };
        Ok(Look::from_reply(reply))
    }

    /// Arms the doorbell for `queues` (see `Doorbell::arm`): turns tracking
    /// on and runs the fetch script in its `Track` mode, which reads, after
    /// `CLIENT CACHING yes`, every key what the queues offer depends on.
    pub(crate) async fn arm(&self, queues: &[String]) -> Result<bool> {
        let (before, all) = self.doorbell.begin_arm(queues)?;
        let args = self.fetch_args(&[], &all, Mode::Track);
        let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        let read = match self.conn().await {
            Ok(mut conn) => self.fetch.invoke_arming(&mut conn, &args[..]).await,
            Err(err) => Err(err),
        };
        self.doorbell.end_arm(before, read)
    }

    /// Sends pending acknowledgements on their own (no fetch carried them).
    async fn flush(&self) -> Result<()> {
        if self.ledger().acks.is_empty() {
            return Ok(());
        }
        // Freed slots no fetch of this capsule took: a waiter may (see `fetch`).
        let acks = self.ledger().take_acks(None);
        self.fetch(&[], false, acks).await.map(drop)
    }

    fn schedule_flush(self: Arc<Self>, after: Duration) {
        let Ok(handle) = crate::runtime::handle() else {
            return;
        };
        handle.spawn(async move {
            tokio::time::sleep(after).await;
            self.ledger().flush_scheduled = false;
            if self.flush().await.is_err() {
                let retry = {
                    let mut ledger = self.ledger();
                    !ledger.acks.is_empty() && !std::mem::replace(&mut ledger.flush_scheduled, true)
                };
                if retry {
                    self.schedule_flush(ACK_RETRY);
                }
            }
        });
    }

    pub(crate) async fn requeue(&self, jobs: Vec<(String, Vec<u8>)>) -> Result<()> {
        if jobs.is_empty() {
            return Ok(());
        }
        let _shared = self.gate.read().await;
        let mut args: Vec<&[u8]> = Vec::with_capacity(1 + jobs.len() * 2);
        args.push(self.uuid.as_bytes());
        for (queue, job) in &jobs {
            args.push(queue.as_bytes());
            args.push(job);
        }
        let sent = async {
            let mut conn = self.conn().await?;
            self.requeue
                .invoke::<(), _, _>(&mut conn, &[] as &[&str], &args[..])
                .await
        }
        .await;
        // Whether or not Redis heard it, the jobs are no longer ours; what did
        // not land is caught by the next reconciliation.
        let mut ledger = self.ledger();
        for (queue, job) in &jobs {
            ledger.forget(queue, &Digest::of(job));
        }
        drop(ledger);
        self.doorbell.wrote();
        sent
    }

    /// Sets the heartbeat and membership; true if the heartbeat key was gone,
    /// in which case the configured limits are written again where unset.
    async fn register(&self) -> Result<bool> {
        let mut conn = self.conn().await?;
        let (existed,): (bool,) = redis::pipe()
            .atomic()
            .cmd("EXISTS")
            .arg(keys::heartbeat(&self.uuid))
            .cmd("SET")
            .arg(keys::heartbeat(&self.uuid))
            .arg(crate::process::id())
            .arg("EX")
            .arg(self.heartbeat_ttl)
            .ignore()
            .cmd("SADD")
            .arg(keys::CAPSULES)
            .arg(&self.uuid)
            .ignore()
            .query_async(&mut conn)
            .await?;
        if !existed {
            self.write_defaults().await?;
        }
        Ok(!existed)
    }

    async fn write_defaults(&self) -> Result<()> {
        let mut pipe = redis::pipe();
        for (queue, kind, value) in self.defaults.lock().iter() {
            pipe.cmd("SET")
                .arg(kind.key(queue))
                .arg(*value)
                .arg("NX")
                .ignore();
        }
        pipe.query_async::<()>(&mut self.conn().await?).await?;
        Ok(())
    }

    /// Pushes back in-progress jobs this capsule does not hold and sets its
    /// busy entries per queue to the jobs it holds. Exact: no script that
    /// changes them runs between reading the ledger and this one.
    async fn reconcile(&self) -> Result<(Vec<(String, i64, i64)>, Vec<(String, String)>)> {
        let _exclusive = self.gate.write().await;
        let mut args = vec![self.uuid.clone()];
        args.extend(self.ledger().held_args());
        let mut conn = self.conn().await?;
        self.reconcile
            .invoke(&mut conn, &[] as &[&str], &args)
            .await
    }
}

/// Seconds since the epoch, for the dead set's score.
pub(crate) fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}
