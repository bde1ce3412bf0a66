//! Opening a thread's direct connection: a second Redis client's
//! handshake, connecting its socket, then AUTH, SELECT and (behind
//! sentinels) ROLE on it, for one thread's requests.

use std::sync::Arc;
use std::time::Instant;

use redis::Value;

use super::conn::{Direct, Stream};
use super::flight::{lost, Flight};
use super::registry::{opened, wanted};
use crate::connection::Redis;
use crate::runtime::wait_for;
use crate::sentinel::is_master;
use crate::{ConnectionSettings, Error, Interrupt, Result, Tls};

/// Opens the calling thread's direct connection to `capsule`'s Redis if it
/// has none (and its last attempt is not too recent): the thread's next
/// looks go through it. `settings` are the capsule's; its callers wait for
/// the connection as for a reply.
pub(crate) fn open(
    capsule: u64,
    redis: &Arc<Redis>,
    settings: &ConnectionSettings,
    interrupt: &Interrupt,
) {
    if !Direct::supports(settings) || !wanted(capsule, redis.generation()) {
        return;
    }
    // Behind sentinels, to the master they name now.
    let master = redis.clone();
    let conn = wait_for(interrupt, settings.timeout, async move {
        let (generation, settings) = master.master().await?;
        let conn = Direct::connect(&settings, generation).await?;
        Ok((conn, settings))
    })
    .and_then(|(conn, settings)| conn.set_up(&settings, redis.follows_master(), interrupt));
    redis.trips.add(1);
    opened(capsule, conn.ok());
}

impl Direct {
    /// Whether `settings` allow a direct connection: TLS goes through the
    /// runtime's connection only.
    fn supports(settings: &ConnectionSettings) -> bool {
        settings.tls == Tls::Off
    }

    /// Connects to the master of `generation`, on the runtime (so that an
    /// interrupt cuts it short).
    async fn connect(settings: &ConnectionSettings, generation: u64) -> Result<Direct> {
        let stream = tokio::time::timeout(settings.timeout, connect(settings))
            .await
            .map_err(|_| Error::Connection("timed out connecting to Redis".into()))??;
        Ok(Direct::new(stream, generation))
    }

    /// AUTH and SELECT as configured, on the calling thread; with
    /// `master_only` (behind sentinels), in the same request, ROLE, which
    /// must say master.
    fn set_up(
        self,
        settings: &ConnectionSettings,
        master_only: bool,
        interrupt: &Interrupt,
    ) -> Result<Direct> {
        let mut setup = redis::pipe();
        match (&settings.username, &settings.password) {
            (Some(user), Some(password)) => {
                setup.cmd("AUTH").arg(user).arg(password);
            }
            (None, Some(password)) => {
                setup.cmd("AUTH").arg(password);
            }
            _ => {}
        }
        if settings.db != 0 {
            setup.cmd("SELECT").arg(settings.db);
        }
        if master_only {
            setup.cmd("ROLE");
        }
        let commands = setup.cmd_iter().count();
        if commands == 0 {
            return Ok(self);
        }
        let mut flight = Flight::start(self, setup.get_packed_pipeline(), commands);
        let reply = flight.finish(interrupt, Instant::now() + settings.timeout)?;
        if let Value::ServerError(err) = reply {
            return Err(redis::RedisError::from(err).into());
        }
        if master_only && !is_master(&reply) {
            return Err(Error::Connection(format!(
                "Redis Sentinel: {}:{}, the master the sentinels named, is not a master",
                settings.host, settings.port
            )));
        }
        flight.into_conn().ok_or_else(lost)
    }
}

async fn connect(settings: &ConnectionSettings) -> Result<Stream> {
    let io = |e: std::io::Error| Error::Connection(format!("cannot connect to Redis: {e}"));
    Ok(match &settings.path {
        Some(path) => {
            let s = tokio::net::UnixStream::connect(path).await.map_err(io)?;
            Stream::Unix(s.into_std().map_err(io)?)
        }
        None => {
            let s = tokio::net::TcpStream::connect((settings.host.as_str(), settings.port))
                .await
                .map_err(io)?;
            s.set_nodelay(true).map_err(io)?;
            // into_std keeps the socket non-blocking, as a Flight wants it.
            Stream::Tcp(s.into_std().map_err(io)?)
        }
    })
}
