//! One Sidekiq capsule's view of the limits: its UUID, its busy slots, and
//! the bookkeeping that keeps those slots in step with the jobs it runs.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use redis::aio::ConnectionManager;
use tokio::sync::RwLock;

use crate::connection::Redis;
use crate::reaper;
use crate::runtime::{run_plain, spawn, Pending};
use crate::selector::{LuaScript, FETCH, REAP, RECONCILE};
use crate::{keys, ConnectionSettings, Interrupt, LimitKind, LimitValue, Result};

/// A job taken from a queue, with a busy slot booked for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// The queue's name, without Sidekiq's `queue:` prefix.
    pub queue: String,
    pub job: Vec<u8>,
}

/// What a heartbeat did besides proving this capsule alive.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct BeatReport {
    /// Dead capsules whose slots this beat freed: (UUID, slots freed).
    pub reaped: Vec<(String, i64)>,
    /// This capsule's busy lists it corrected: (busy key, entries before, after).
    pub corrected: Vec<(String, i64, i64)>,
    /// The capsule's heartbeat key was gone before its period was up: Redis
    /// lost its data (or reaped a frozen process). The beat registered the
    /// capsule again and wrote the configured limits where none are set.
    pub restored: bool,
}

/// What this capsule knows it holds, per queue.
#[derive(Default)]
struct Ledger {
    running: BTreeMap<String, u64>,
    fetching: u64,
}

pub(crate) struct Inner {
    pub(crate) uuid: String,
    pub(crate) redis: Redis,
    heartbeat_ttl: u64,
    /// Limits from the configuration, written again if Redis loses its data.
    defaults: Mutex<Vec<(String, LimitKind, u64)>>,
    /// How long a caller waits for a reply (Sidekiq's `timeout`).
    timeout: Duration,
    ledger: Mutex<Ledger>,
    /// Fetches and releases share it; reconciliation takes it alone, so the
    /// ledger it reads matches what Redis holds when its script runs.
    gate: RwLock<()>,
    pub(crate) fetch: LuaScript,
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
    pub fn new(settings: &ConnectionSettings, heartbeat_period: Duration) -> Self {
        let inner = Inner {
            uuid: uuid::Uuid::new_v4().to_string(),
            redis: Redis::new(settings),
            timeout: settings.timeout,
            defaults: Mutex::default(),
            heartbeat_ttl: (heartbeat_period.as_secs_f64() * 4.0).ceil().max(1.0) as u64,
            ledger: Mutex::default(),
            gate: RwLock::new(()),
            fetch: LuaScript::new(FETCH),
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
    /// non-empty. If interrupted after Redis handed out a job, the job goes
    /// back to the front of its queue and its slot is freed.
    pub fn fetch<S: AsRef<str>>(
        &self,
        queues: &[S],
        interrupt: &Interrupt,
    ) -> Result<Option<Fetched>> {
        if interrupt.is_triggered() {
            return Err(crate::Error::Interrupted);
        }
        self.start_fetch(queues)?.wait(interrupt)
    }

    /// [`Capsule::fetch`], started: the caller waits with [`Pending::wait`],
    /// again after an interrupt that it chose to ignore. Dropping the
    /// `Pending` gives back a job that arrives after that.
    pub fn start_fetch<S: AsRef<str>>(&self, queues: &[S]) -> Result<Pending<Option<Fetched>>> {
        let mut args = Vec::with_capacity(queues.len() + 1);
        args.push(self.inner.uuid.clone());
        args.extend(queues.iter().map(|q| {
            let q = q.as_ref();
            q.strip_prefix("queue:").unwrap_or(q).to_owned()
        }));
        let inner = self.inner.clone();
        let undo_inner = self.inner.clone();
        spawn(
            self.inner.timeout,
            async move {
                // Counted from before the script runs until its job is in
                // `running`, so reconciliation never takes its entry for a leak.
                inner.ledger.lock().fetching += 1;
                let result = inner.fetch(&args).await;
                let mut ledger = inner.ledger.lock();
                ledger.fetching -= 1;
                if let Ok(Some(fetched)) = &result {
                    *ledger.running.entry(fetched.queue.clone()).or_default() += 1;
                }
                result
            },
            |abandoned: Option<Fetched>| async move {
                if let Some(f) = abandoned {
                    let _ = undo_inner.requeue(vec![(f.queue, f.job)]).await;
                }
            },
        )
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

    /// Frees the slot of a finished job of `queue`. If Redis cannot be told
    /// now, the next heartbeat frees it (see [`Capsule::beat`]).
    pub fn release(&self, queue: &str, interrupt: &Interrupt) -> Result<()> {
        let inner = self.inner.clone();
        let queue = queue.to_owned();
        run_plain(interrupt, self.inner.timeout, async move {
            inner.release(queue).await
        })
    }

    /// Puts unfinished jobs back at the front of their queues and frees
    /// their slots, in one atomic step. `jobs` are (queue name, payload).
    pub fn requeue(&self, jobs: Vec<(String, Vec<u8>)>, interrupt: &Interrupt) -> Result<()> {
        let inner = self.inner.clone();
        run_plain(interrupt, self.inner.timeout, async move {
            inner.requeue(jobs).await
        })
    }

    /// Proves this capsule alive, heals its busy lists, and reaps capsules
    /// whose heartbeat expired, on every queue.
    pub fn beat(&self, interrupt: &Interrupt) -> Result<BeatReport> {
        let inner = self.inner.clone();
        run_plain(interrupt, self.inner.timeout * 4, async move {
            let restored = inner.register().await?;
            let corrected = inner.reconcile().await?;
            let reaped = reaper::reap_dead(&inner).await?;
            Ok(BeatReport {
                reaped,
                corrected,
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

    /// Removes this capsule: its heartbeat, its membership, and every slot it
    /// still holds in `queues` or in any queue it fetched from. Returns the
    /// number of slots freed.
    pub fn deregister<S: AsRef<str>>(&self, queues: &[S], interrupt: &Interrupt) -> Result<i64> {
        let inner = self.inner.clone();
        let mut names: BTreeSet<String> = queues.iter().map(|q| q.as_ref().to_owned()).collect();
        names.extend(inner.ledger.lock().running.keys().cloned());
        run_plain(interrupt, self.inner.timeout * 4, async move {
            let _exclusive = inner.gate.write().await;
            reaper::reap_one(
                &inner,
                &inner.uuid,
                names.iter().map(|q| keys::busy(q)),
                true,
            )
            .await
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
            inner.write_defaults().await
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
    pub(crate) async fn conn(&self) -> Result<ConnectionManager> {
        self.redis.conn().await
    }

    async fn fetch(&self, args: &[String]) -> Result<Option<Fetched>> {
        let _shared = self.gate.read().await;
        let mut conn = self.conn().await?;
        let reply: Option<(String, Vec<u8>)> =
            self.fetch.invoke(&mut conn, &[] as &[&str], args).await?;
        Ok(reply.map(|(queue, job)| Fetched { queue, job }))
    }

    async fn release(&self, queue: String) -> Result<()> {
        let _shared = self.gate.read().await;
        let sent = async {
            let mut conn = self.conn().await?;
            redis::cmd("LREM")
                .arg(keys::busy(&queue))
                .arg(1)
                .arg(&self.uuid)
                .query_async::<()>(&mut conn)
                .await?;
            Ok(())
        }
        .await;
        // Whether or not Redis heard it, the job is no longer ours; a release
        // that did not land is caught by the next reconciliation.
        self.forget(&queue, 1);
        sent
    }

    pub(crate) async fn requeue(&self, jobs: Vec<(String, Vec<u8>)>) -> Result<()> {
        if jobs.is_empty() {
            return Ok(());
        }
        let _shared = self.gate.read().await;
        let mut pipe = redis::pipe();
        pipe.atomic();
        for (queue, job) in &jobs {
            pipe.cmd("RPUSH").arg(keys::queue(queue)).arg(job).ignore();
            pipe.cmd("LREM")
                .arg(keys::busy(queue))
                .arg(1)
                .arg(&self.uuid)
                .ignore();
        }
        let sent = async {
            pipe.query_async::<()>(&mut self.conn().await?)
                .await
                .map_err(Into::into)
        }
        .await;
        for (queue, _) in &jobs {
            self.forget(queue, 1);
        }
        sent
    }

    fn forget(&self, queue: &str, count: u64) {
        if let Some(running) = self.ledger.lock().running.get_mut(queue) {
            *running = running.saturating_sub(count);
        }
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
            .arg(std::process::id())
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

    /// Compares, per queue, the entries this capsule has in Redis with the
    /// jobs it runs, and corrects Redis. Exact: no fetch or release runs
    /// between reading the ledger and the script.
    async fn reconcile(&self) -> Result<Vec<(String, i64, i64)>> {
        let _exclusive = self.gate.write().await;
        let mut args = vec![self.uuid.clone()];
        {
            let ledger = self.ledger.lock();
            for (queue, running) in &ledger.running {
                args.push(keys::busy(queue));
                args.push(running.to_string());
                args.push((running + ledger.fetching).to_string());
            }
        }
        if args.len() == 1 {
            return Ok(Vec::new());
        }
        let mut conn = self.conn().await?;
        self.reconcile
            .invoke(&mut conn, &[] as &[&str], &args)
            .await
    }
}
