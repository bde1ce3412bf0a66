//! A second Redis client's handshake: a plain, non-blocking socket in RESP2,
//! authenticated and on its database, for one thread's requests.

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::time::Instant;

use redis::Value;

use super::flight::{lost, Flight};
use crate::process::{ForkLocal, Stale};
use crate::sentinel::is_master;
use crate::{ConnectionSettings, Error, Interrupt, Result, Tls};

pub(super) enum Stream {
    Tcp(std::net::TcpStream),
    Unix(std::os::unix::net::UnixStream),
}

impl Stream {
    #[inline]
    pub(super) fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }

    #[inline]
    pub(super) fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
        }
    }

    #[inline]
    pub(super) fn fd(&self) -> RawFd {
        match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
        }
    }
}

/// A connection in RESP2, non-blocking, authenticated and on its database.
pub(crate) struct Direct {
    /// A forked child drops its copy of the socket (closing only that copy).
    stream: ForkLocal<Stream>,
    /// The generation of the master it was opened to (see sentinel.rs).
    generation: u64,
}

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
        Ok(Direct {
            stream: ForkLocal::here(stream, Stale::Drop),
            generation,
        })
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

    /// Its process's, and opened to the master of `generation`.
    pub(crate) fn is_current(&self, generation: u64) -> bool {
        self.generation == generation && self.stream.is_current()
    }

    /// The socket. Checked once, where the registry hands the connection
    /// out (see `registry::take`), not on every read and write.
    #[inline]
    pub(super) fn stream(&mut self) -> &mut Stream {
        self.stream.unchecked()
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
