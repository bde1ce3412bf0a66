//! A second Redis client's handshake: connecting a direct connection's
//! socket, then AUTH, SELECT and (behind sentinels) ROLE on it, for one
//! thread's requests.

use std::time::Instant;

use redis::Value;

use super::conn::{Direct, Stream};
use super::flight::{lost, Flight};
use crate::sentinel::is_master;
use crate::{ConnectionSettings, Error, Interrupt, Result, Tls};

impl Direct {
    /// Whether `settings` allow a direct connection: TLS goes through the
    /// runtime's connection only.
    pub(crate) fn supports(settings: &ConnectionSettings) -> bool {
        settings.tls == Tls::Off
    }

    /// Connects to the master of `generation`, on the runtime (so that an
    /// interrupt cuts it short).
    pub(crate) async fn connect(settings: &ConnectionSettings, generation: u64) -> Result<Direct> {
        let stream = tokio::time::timeout(settings.timeout, connect(settings))
            .await
            .map_err(|_| Error::Connection("timed out connecting to Redis".into()))??;
        Ok(Direct::new(stream, generation))
    }

    /// AUTH and SELECT as configured, on the calling thread; with
    /// `master_only` (behind sentinels), in the same request, ROLE, which
    /// must say master.
    pub(crate) fn set_up(
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
