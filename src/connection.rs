//! A capsule's multiplexed connection to Redis (RESP3, reconnecting,
//! opened again after `fork` and, behind sentinels, on each new master),
//! counting its round trips; and the writer through which a write tells
//! the doorbell.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Cmd, Pipeline, ProtocolVersion, PushInfo, RedisFuture, Value};
use tokio::sync::OnceCell;

use crate::process::{ForkLocal, Stale};
use crate::sentinel::{is_master, moved_error, moved_reply, Follower};
use crate::settings::ConnectionSettings;
use crate::{Error, Result};

type Cell = Arc<OnceCell<ConnectionManager>>;

type OnPush = Arc<dyn Fn(&PushInfo) + Send + Sync>;

/// Round trips to Redis, counted where they are made: a pipeline or a script
/// is one. The benchmark reports them per job.
#[derive(Clone, Default)]
pub(crate) struct RoundTrips(Arc<AtomicU64>);

impl RoundTrips {
    pub(crate) fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A capsule's connection, counting its round trips.
#[derive(Clone)]
pub(crate) struct Conn {
    manager: ConnectionManager,
    trips: RoundTrips,
    /// Behind sentinels: the follower told when a reply says the master
    /// moved, and the generation this connection belongs to.
    follower: Option<(Arc<Follower>, u64)>,
}

impl redis::aio::ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        self.trips.add(1);
        let sent = self.manager.req_packed_command(cmd);
        let Some((follower, generation)) = self.follower.clone() else {
            return sent;
        };
        Box::pin(async move {
            let reply = sent.await;
            let moved = match &reply {
                Ok(value) => moved_reply(value),
                Err(err) => moved_error(err),
            };
            if moved {
                follower.moved(generation);
            }
            reply
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        self.trips.add(1);
        let sent = self.manager.req_packed_commands(cmd, offset, count);
        let Some((follower, generation)) = self.follower.clone() else {
            return sent;
        };
        Box::pin(async move {
            let replies = sent.await;
            let moved = match &replies {
                Ok(values) => values.iter().any(moved_reply),
                Err(err) => moved_error(err),
            };
            if moved {
                follower.moved(generation);
            }
            replies
        })
    }

    fn get_db(&self) -> i64 {
        self.manager.get_db()
    }
}

/// A multiplexed, self-reconnecting Redis connection, opened lazily and
/// opened again after `fork` (a child never writes to its parent's socket).
/// Behind sentinels, opened again on the new master when the master moved
/// (see sentinel.rs).
pub(crate) struct Redis {
    settings: ConnectionSettings,
    config: ConnectionManagerConfig,
    /// Where the master is, when the settings name sentinels.
    follower: Option<Arc<Follower>>,
    /// A forked child opens its own: the parent's socket is the parent's
    /// to use and close (so its copy is forgotten, not dropped). With the
    /// follower's generation it was opened for.
    cell: Mutex<ForkLocal<Option<(u64, Cell)>>>,
    pub(crate) trips: RoundTrips,
    /// Told after every write made through [`Redis::writer`].
    on_write: Box<dyn Fn() + Send + Sync>,
    /// The connection's push messages; also told of a connection replaced
    /// (as a lost connection: what it tracked is forgotten).
    on_push: OnPush,
    /// Told when a connection to a master that moved is open.
    on_new_master: Arc<dyn Fn() + Send + Sync>,
}

/// A write on a [`Redis`] connection: dropped, it tells the connection's
/// write hook, unless [`Writer::wrote_nothing`] says otherwise. A capsule's
/// connection is the doorbell's tracking connection: a write there ends the
/// tracking of the keys it wrote without a message (NOLOOP), and its hook
/// disarms the bell (see `Doorbell::wrote`), so no writer need remember to.
pub(crate) struct Writer<'a> {
    conn: Conn,
    hook: Option<&'a (dyn Fn() + Send + Sync)>,
}

impl Writer<'_> {
    /// The request wrote no key (a fetch that found nothing).
    pub(crate) fn wrote_nothing(&mut self) {
        self.hook = None;
    }
}

impl std::ops::Deref for Writer<'_> {
    type Target = Conn;

    fn deref(&self) -> &Conn {
        &self.conn
    }
}

impl std::ops::DerefMut for Writer<'_> {
    fn deref_mut(&mut self) -> &mut Conn {
        &mut self.conn
    }
}

impl Drop for Writer<'_> {
    fn drop(&mut self) {
        if let Some(hook) = self.hook {
            hook();
        }
    }
}

impl Redis {
    /// `on_push` receives the connection's push messages (client-side
    /// caching invalidations, and a lost connection); it must not block.
    pub(crate) fn new(
        settings: &ConnectionSettings,
        on_push: impl Fn(&PushInfo) + Send + Sync + 'static,
    ) -> Self {
        let on_push: OnPush = Arc::new(on_push);
        let pushed = on_push.clone();
        // Callers stop waiting after `timeout` (see runtime::run) while the
        // command completes, so a late reply is still handled. The connection's
        // own response timeout is only a backstop against a silent peer.
        let config = ConnectionManagerConfig::new()
            .set_push_sender(move |push: PushInfo| {
                pushed(&push);
                Ok::<(), std::convert::Infallible>(())
            })
            .set_connection_timeout(settings.timeout)
            .set_response_timeout((settings.timeout * 4).max(Duration::from_secs(10)))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_millis(500).as_millis() as u64);
        Self {
            settings: settings.clone(),
            config,
            follower: settings
                .sentinel
                .as_ref()
                .map(|sentinel| Follower::new(settings, sentinel)),
            cell: Mutex::new(ForkLocal::new(None, Stale::Forget)),
            trips: RoundTrips::default(),
            on_write: Box::new(|| {}),
            on_push,
            on_new_master: Arc::new(|| {}),
        }
    }

    /// This connection, telling `on_new_master` when it opened a connection
    /// to a master after the last one moved (or seemed to: a timeout); it
    /// runs on the runtime and must not block.
    pub(crate) fn on_new_master(
        mut self,
        on_new_master: impl Fn() + Send + Sync + 'static,
    ) -> Self {
        self.on_new_master = Arc::new(on_new_master);
        self
    }

    /// The generation of the master followed now (0 without sentinels):
    /// connections of an older one are not used again.
    #[inline]
    pub(crate) fn generation(&self) -> u64 {
        self.follower.as_ref().map_or(0, |f| f.generation())
    }

    /// True behind sentinels.
    pub(crate) fn follows_master(&self) -> bool {
        self.follower.is_some()
    }

    /// A connection of `generation` found its server no master, or gone.
    pub(crate) fn moved(&self, generation: u64) {
        if let Some(follower) = &self.follower {
            follower.moved(generation);
        }
    }

    /// Where the master is now, and its generation: the settings with the
    /// address the sentinels give, or as they are without sentinels.
    pub(crate) async fn master(&self) -> Result<(u64, ConnectionSettings)> {
        match &self.follower {
            Some(follower) => {
                follower.watch();
                follower.master().await
            }
            None => Ok((0, self.settings.clone())),
        }
    }

    /// This connection, telling `on_write` of the writes made through
    /// [`Redis::writer`]; it must not block.
    pub(crate) fn on_write(mut self, on_write: impl Fn() + Send + Sync + 'static) -> Self {
        self.on_write = Box::new(on_write);
        self
    }

    /// The connection of the current generation: a new one if the master
    /// moved since the last was opened, the doorbell told that what the
    /// last tracked is forgotten.
    fn cell(&self) -> (u64, Cell) {
        let generation = self.generation();
        let (cell, replaced) = {
            let mut local = self.cell.lock();
            let slot = local.get();
            match slot {
                Some((at, cell)) if *at == generation => return (generation, cell.clone()),
                _ => {}
            }
            let cell = Cell::default();
            let replaced = slot.replace((generation, cell.clone())).is_some();
            (cell, replaced)
        };
        if replaced {
            (self.on_push)(&PushInfo {
                kind: redis::PushKind::Disconnection,
                data: Vec::new(),
            });
        }
        (generation, cell)
    }

    pub(crate) async fn conn(&self) -> Result<Conn> {
        let (generation, cell) = self.cell();
        let conn = cell.get_or_try_init(|| self.open(generation)).await?;
        Ok(Conn {
            manager: conn.clone(),
            trips: self.trips.clone(),
            follower: self.follower.clone().map(|f| (f, generation)),
        })
    }

    /// Opens the connection of `generation`; behind sentinels, to the
    /// master they name, which must say it is one.
    async fn open(&self, generation: u64) -> Result<ConnectionManager> {
        let (_, settings) = self.master().await?;
        // RESP3, as Sidekiq's own client: push messages need it.
        let client = settings.client(ProtocolVersion::RESP3)?;
        let opened = ConnectionManager::new_with_config(client, self.config.clone()).await;
        let Some(follower) = &self.follower else {
            return opened.map_err(Error::from);
        };
        let mut manager = opened.map_err(|err| {
            if moved_error(&err) {
                follower.moved(generation);
            }
            Error::from(err)
        })?;
        let role =
            redis::aio::ConnectionLike::req_packed_command(&mut manager, &redis::cmd("ROLE")).await;
        // ROLE denied by the ACL: no failover would help, say what to add.
        let refusal = match &role {
            Err(err) => err.to_string(),
            Ok(Value::ServerError(err)) => err.details().unwrap_or_default().to_owned(),
            Ok(_) => String::new(),
        };
        if crate::denial::denied_command(&refusal).is_some() {
            return Err(Error::Command(crate::denial::explain(refusal)));
        }
        if !role.as_ref().is_ok_and(is_master) {
            follower.moved(generation);
            return Err(Error::Connection(format!(
                "Redis Sentinel: {}:{}, the master the sentinels named, is not a master (a failover is under way)",
                settings.host, settings.port
            )));
        }
        if generation > 0 {
            (self.on_new_master)();
        }
        Ok(manager)
    }

    /// The connection for a request that writes (see [`Writer`]).
    pub(crate) async fn writer(&self) -> Result<Writer<'_>> {
        Ok(Writer {
            conn: self.conn().await?,
            hook: Some(&*self.on_write),
        })
    }
}
