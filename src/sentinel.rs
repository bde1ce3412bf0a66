//! Redis Sentinel: which server is a name's master now, and when that may
//! have changed.
//!
//! Resolved here, with `SENTINEL GET-MASTER-ADDR-BY-NAME`, rather than by
//! redis-rs's `sentinel` feature: the address is needed by both kinds of
//! connection, the runtime's `ConnectionManager` (which reconnects to one
//! fixed address, so it must be replaced, not reconnected, after a failover)
//! and each thread's plain socket (direct/), which is no redis-rs connection
//! at all. One [`Follower`] serves both: a *generation* counts the masters
//! it has followed, and a connection of an older generation is not used
//! again.
//!
//! The generation moves on when a connection says the master moved (a
//! READONLY or MASTERDOWN reply, a refused or broken connection: see
//! [`moved_error`]), when the server a resolution named says it is no master
//! (`ROLE`), and when a sentinel announces `+switch-master` for the name (a
//! subscription on one sentinel, see [`Follower::watch`]): the announcement
//! comes before the old master is demoted, which may take seconds more, and
//! the writes it still accepts meanwhile are lost with it.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use redis::aio::ConnectionLike;
use redis::{AsyncConnectionConfig, ErrorKind, ProtocolVersion, PushInfo, PushKind, Value};

use crate::process::{ForkLocal, Stale};
use crate::settings::{ConnectionSettings, SentinelSettings};
use crate::{Error, Result};

/// The channel sentinels announce a finished failover on.
const SWITCH_MASTER: &str = "+switch-master";

/// After losing its sentinel, the watch tries the next one after this long.
const WATCH_RETRY: Duration = Duration::from_millis(500);

/// Error codes of a server that is no master any more (READONLY, or
/// MASTERDOWN from a replica that lost its master), or of a master that lost
/// its replica (NOREPLICAS, under `min-replicas-to-write`: the replica may
/// have been promoted).
const MOVED_CODES: [&str; 3] = ["READONLY", "MASTERDOWN", "NOREPLICAS"];

/// True if a Redis error says the master is not there any more (see
/// [`MOVED_CODES`]), or the connection was refused, broke or timed out.
pub(crate) fn moved_error(err: &redis::RedisError) -> bool {
    matches!(err.kind(), ErrorKind::ReadOnly | ErrorKind::MasterDown)
        || err.code().is_some_and(|code| MOVED_CODES.contains(&code))
        || err.is_io_error()
        || err.is_timeout()
        || err.is_connection_dropped()
        || err.is_connection_refusal()
}

/// True if a reply (or, for a pipeline, one of its replies) is an error
/// that says the server is no master any more.
pub(crate) fn moved_reply(value: &Value) -> bool {
    match value {
        Value::ServerError(err) => MOVED_CODES.contains(&err.code()),
        _ => false,
    }
}

/// True if `ROLE`'s reply names a master.
pub(crate) fn is_master(role: &Value) -> bool {
    match role {
        Value::Array(parts) => matches!(parts.first(),
            Some(Value::BulkString(b)) if b == b"master"),
        _ => false,
    }
}

/// The settings of one capsule's (or one limits administration's) master,
/// followed through the sentinels.
pub(crate) struct Follower {
    /// The master's database, credentials, TLS and timeout; its host and
    /// port are what the sentinels say.
    settings: ConnectionSettings,
    sentinel: SentinelSettings,
    generation: AtomicU64,
    /// The master's settings as resolved for a generation.
    resolved: tokio::sync::Mutex<Option<(u64, ConnectionSettings)>>,
    /// The sentinel that answered last, asked first next time.
    first: AtomicUsize,
    /// Whether this process subscribed to `+switch-master` (a forked child
    /// subscribes again: the parent's task is not its own).
    watching: Mutex<ForkLocal<bool>>,
}

impl Follower {
    pub(crate) fn new(settings: &ConnectionSettings, sentinel: &SentinelSettings) -> Arc<Self> {
        Arc::new(Self {
            settings: ConnectionSettings {
                sentinel: None,
                path: None,
                ..settings.clone()
            },
            sentinel: sentinel.clone(),
            generation: AtomicU64::new(0),
            resolved: tokio::sync::Mutex::new(None),
            first: AtomicUsize::new(0),
            watching: Mutex::new(ForkLocal::new(false, Stale::Drop)),
        })
    }

    /// The master followed now: a connection opened for an older one is
    /// not used again.
    #[inline]
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Relaxed)
    }

    /// A connection of `generation` found its server no master (or gone):
    /// the next connection asks the sentinels again. Many failures of the
    /// same generation move it on once.
    pub(crate) fn moved(&self, generation: u64) {
        let _ = self.generation.compare_exchange(
            generation,
            generation + 1,
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
    }

    /// The master's settings for the current generation, asking the
    /// sentinels if this generation has not asked yet.
    pub(crate) async fn master(&self) -> Result<(u64, ConnectionSettings)> {
        let mut resolved = self.resolved.lock().await;
        let generation = self.generation();
        if let Some((at, settings)) = resolved.as_ref() {
            if *at == generation {
                return Ok((generation, settings.clone()));
            }
        }
        let (host, port) = self.resolve().await?;
        let settings = ConnectionSettings {
            host,
            port,
            ..self.settings.clone()
        };
        *resolved = Some((generation, settings.clone()));
        Ok((generation, settings))
    }

    /// Asks each sentinel in turn, the last to answer first, where the
    /// master is. The error names every sentinel and what it said, never a
    /// password.
    async fn resolve(&self) -> Result<(String, u16)> {
        let sentinels = &self.sentinel.sentinels;
        let name = &self.sentinel.master_name;
        let start = self.first.load(Ordering::Relaxed);
        let mut failed = Vec::new();
        let mut unknown = Vec::new();
        for k in 0..sentinels.len() {
            let at = (start + k) % sentinels.len();
            let sentinel = &sentinels[at];
            match ask(sentinel, name).await {
                Ok(Some(address)) => {
                    self.first.store(at, Ordering::Relaxed);
                    return Ok(address);
                }
                Ok(None) => unknown.push(address(sentinel)),
                Err(err) => failed.push(format!("{}: {}", address(sentinel), detail(&err))),
            }
        }
        let mut problems = Vec::new();
        if !unknown.is_empty() {
            problems.push(format!(
                "no master named {name:?} is known to {}",
                unknown.join(", ")
            ));
        }
        problems.extend(failed);
        Err(Error::Connection(format!(
            "Redis Sentinel: no sentinel gave the address of master {name:?} ({})",
            problems.join("; ")
        )))
    }

    /// Subscribes, once per process, to `+switch-master` on a sentinel (the
    /// one that answered last, then the next), and moves the generation on
    /// when it names this master. Ends when the follower is dropped.
    pub(crate) fn watch(self: &Arc<Self>) {
        {
            let mut watching = self.watching.lock();
            if std::mem::replace(watching.get(), true) {
                return;
            }
        }
        let Ok(handle) = crate::runtime::handle() else {
            return;
        };
        let follower = Arc::downgrade(self);
        crate::runtime::detach(&handle, async move {
            let mut at = match follower.upgrade() {
                Some(f) => f.first.load(Ordering::Relaxed),
                None => return,
            };
            while let Some(f) = follower.upgrade() {
                let sentinel = f.sentinel.sentinels[at % f.sentinel.sentinels.len()].clone();
                drop(f);
                let _ = listen(&follower, &sentinel).await;
                at += 1;
                tokio::time::sleep(WATCH_RETRY).await;
            }
        });
    }
}

/// One sentinel's answer: the master's address, or None if it knows no
/// master of that name.
async fn ask(sentinel: &ConnectionSettings, name: &str) -> Result<Option<(String, u16)>> {
    let client = sentinel.client(ProtocolVersion::RESP2)?;
    let asked = async {
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(sentinel.timeout)
            .set_response_timeout(sentinel.timeout);
        let mut conn = client
            .get_multiplexed_async_connection_with_config(&config)
            .await?;
        let reply: Option<(String, u16)> = redis::cmd("SENTINEL")
            .arg("GET-MASTER-ADDR-BY-NAME")
            .arg(name)
            .query_async(&mut conn)
            .await?;
        Ok::<_, Error>(reply)
    };
    tokio::time::timeout(sentinel.timeout, asked)
        .await
        .map_err(|_| Error::Connection("timed out".into()))?
}

/// Listens to one sentinel's `+switch-master` announcements until its
/// connection ends (or the follower is dropped).
async fn listen(follower: &Weak<Follower>, sentinel: &ConnectionSettings) -> Result<()> {
    let client = sentinel.client(ProtocolVersion::RESP3)?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<PushInfo>();
    let config = AsyncConnectionConfig::new()
        .set_connection_timeout(sentinel.timeout)
        .set_response_timeout(sentinel.timeout)
        .set_push_sender(move |push: PushInfo| {
            let _ = tx.send(push);
            Ok::<(), std::convert::Infallible>(())
        });
    let mut conn = client
        .get_multiplexed_async_connection_with_config(&config)
        .await?;
    conn.subscribe(SWITCH_MASTER).await?;
    let mut alive = tokio::time::interval(Duration::from_secs(5));
    loop {
        tokio::select! {
            push = rx.recv() => {
                let Some(push) = push else { return Ok(()) };
                let Some(f) = follower.upgrade() else { return Ok(()) };
                match push.kind {
                    PushKind::Message if names(&push, &f.sentinel.master_name) => {
                        f.moved(f.generation());
                    }
                    PushKind::Disconnection => return Ok(()),
                    _ => {}
                }
            }
            _ = alive.tick() => {
                if follower.strong_count() == 0 {
                    return Ok(());
                }
                // A sentinel gone silent (its host unplugged) is found here.
                let ping = tokio::time::timeout(sentinel.timeout, conn.req_packed_command(&redis::cmd("PING"))).await;
                if !matches!(ping, Ok(Ok(_))) {
                    return Ok(());
                }
            }
        }
    }
}

/// True if a `+switch-master` message ("<name> <old ip> <old port> <new ip>
/// <new port>") is about `name`.
fn names(push: &PushInfo, name: &str) -> bool {
    let payload = match push.data.get(1) {
        Some(Value::BulkString(b)) => b.as_slice(),
        Some(Value::SimpleString(s)) => s.as_bytes(),
        _ => return false,
    };
    payload.split(|&b| b == b' ').next() == Some(name.as_bytes())
}

/// What went wrong, without the kind of error the whole message names.
fn detail(err: &Error) -> String {
    match err {
        Error::Connection(msg)
        | Error::Command(msg)
        | Error::Invalid(msg)
        | Error::Refused(msg) => msg.clone(),
        Error::Interrupted => "interrupted".into(),
    }
}

/// "host:port" of a sentinel, for messages.
fn address(sentinel: &ConnectionSettings) -> String {
    format!("{}:{}", sentinel.host, sentinel.port)
}
