//! A fetching thread's own connection, driven by that thread, as Sidekiq's
//! own client drives its sockets: the thread writes its request and, if the
//! reply is already there, reads it on the spot; only a reply still to come
//! is waited for, in poll(2) (without the GVL, interruptibly). No other
//! thread is woken on the hot path.
//!
//! A request whose caller walks away is finished on the I/O runtime, which
//! takes the socket over, so that a job in its reply still goes back.

use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::Instant;

use redis::Value;

use crate::runtime::handle;
use crate::{ConnectionSettings, Error, Interrupt, Result, Tls};

enum Stream {
    Tcp(std::net::TcpStream),
    Unix(std::os::unix::net::UnixStream),
}

impl Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }

    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
        }
    }

    fn fd(&self) -> RawFd {
        match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
        }
    }
}

/// A connection in RESP2, non-blocking, authenticated and on its database.
pub(crate) struct Direct {
    pid: u32,
    stream: Stream,
}

impl Direct {
    /// Whether `settings` allow a direct connection: TLS goes through the
    /// runtime's connection only.
    pub(crate) fn supports(settings: &ConnectionSettings) -> bool {
        settings.tls == Tls::Off
    }

    /// Connects, on the runtime (so that an interrupt cuts it short).
    pub(crate) async fn connect(settings: &ConnectionSettings) -> Result<Direct> {
        let stream = tokio::time::timeout(settings.timeout, connect(settings))
            .await
            .map_err(|_| Error::Connection("timed out connecting to Redis".into()))??;
        Ok(Direct {
            pid: crate::process::id(),
            stream,
        })
    }

    /// AUTH and SELECT as configured, on the calling thread.
    pub(crate) fn set_up(
        self,
        settings: &ConnectionSettings,
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
        let commands = setup.cmd_iter().count();
        if commands == 0 {
            return Ok(self);
        }
        let mut flight = Flight::start(self, setup.get_packed_pipeline(), commands);
        let reply = flight.finish(interrupt, Instant::now() + settings.timeout)?;
        if let Value::ServerError(err) = reply {
            return Err(redis::RedisError::from(err).into());
        }
        flight.into_conn().ok_or_else(lost)
    }

    pub(crate) fn is_ours(&self) -> bool {
        self.pid == crate::process::id()
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

fn lost() -> Error {
    Error::Connection("the connection to Redis was lost".into())
}

/// One request on a [`Direct`] connection and its reply (`replies` replies
/// for a pipeline, of which the last is kept; errors before it fail).
pub(crate) struct Flight {
    conn: Option<Direct>,
    out: Vec<u8>,
    written: usize,
    replies: usize,
    buf: Vec<u8>,
    reply: Option<Value>,
}

impl Flight {
    /// Writes what the socket takes now and reads a reply already there,
    /// without blocking.
    pub(crate) fn start(conn: Direct, request: Vec<u8>, replies: usize) -> Flight {
        let mut flight = Flight {
            conn: Some(conn),
            out: request,
            written: 0,
            replies,
            buf: Vec::new(),
            reply: None,
        };
        // An error here shows again in `finish`, which reports it.
        let _ = flight.advance();
        flight
    }

    /// A reply other than an error is here: `finish` will not block.
    pub(crate) fn is_ready_value(&self) -> bool {
        matches!(&self.reply, Some(v) if !matches!(v, Value::ServerError(_)))
    }

    /// The reply, waiting for it until `deadline` or an interrupt; after
    /// `Err(Interrupted)` the flight can be finished later. On success the
    /// connection is free again: [`Flight::into_conn`].
    pub(crate) fn finish(&mut self, interrupt: &Interrupt, deadline: Instant) -> Result<Value> {
        loop {
            if let Some(value) = self.reply.take() {
                return Ok(value);
            }
            if interrupt.is_triggered() {
                return Err(Error::Interrupted);
            }
            let want_write = self.written < self.out.len();
            if !self.advance()? {
                let fd = self.conn.as_ref().ok_or_else(lost)?.stream.fd();
                wait_for(fd, want_write, interrupt, deadline)?;
            }
        }
    }

    /// The connection has not broken (the request may still be answered).
    pub(crate) fn is_alive(&self) -> bool {
        self.conn.is_some()
    }

    pub(crate) fn into_conn(mut self) -> Option<Direct> {
        self.conn.take()
    }

    /// Writes and reads what the socket allows without blocking; true if it
    /// moved on (or the reply is complete), false if it must wait.
    fn advance(&mut self) -> Result<bool> {
        let conn = self.conn.as_mut().ok_or_else(lost)?;
        let mut moved = false;
        while self.written < self.out.len() {
            match conn.stream.write(&self.out[self.written..]) {
                Ok(0) => return Err(self.fail()),
                Ok(n) => {
                    self.written += n;
                    moved = true;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(moved),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return Err(self.fail()),
            }
        }
        let mut chunk = [0u8; 16 * 1024];
        loop {
            if let Some(value) = self.parsed()? {
                self.reply = Some(value);
                return Ok(true);
            }
            let conn = self.conn.as_mut().ok_or_else(lost)?;
            match conn.stream.read(&mut chunk) {
                Ok(0) => return Err(self.fail()),
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    moved = true;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(moved),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return Err(self.fail()),
            }
        }
    }

    /// The last of the replies once all are in; an error reply before it
    /// is returned instead.
    fn parsed(&mut self) -> Result<Option<Value>> {
        let mut at = 0;
        let mut last = None;
        for _ in 0..self.replies {
            let Some((value, len)) = parse_value(&self.buf[at..])? else {
                return Ok(None);
            };
            at += len;
            let failed = matches!(value, Value::ServerError(_));
            last = Some(value);
            if failed {
                break;
            }
        }
        self.buf.drain(..at);
        Ok(last)
    }

    fn fail(&mut self) -> Error {
        self.conn = None;
        lost()
    }

    /// Finishes the request on the runtime (the caller has gone), then hands
    /// the reply to `then`.
    pub(crate) fn abandon<F>(mut self, then: F)
    where
        F: FnOnce(Result<Value>) + Send + 'static,
    {
        if let Some(value) = self.reply.take() {
            then(Ok(value));
            return;
        }
        let Ok(handle) = handle() else {
            then(Err(lost()));
            return;
        };
        handle.spawn_blocking(move || {
            let far = Instant::now() + std::time::Duration::from_secs(30);
            then(self.finish(&Interrupt::new(), far));
        });
    }
}

/// Blocks in poll(2) until `fd` is readable (or writable), the interrupt's
/// pipe is written, or `deadline`.
fn wait_for(fd: RawFd, write: bool, interrupt: &Interrupt, deadline: Instant) -> Result<()> {
    WAKE.with(|wake| {
        let (read_end, write_end) = match wake {
            Ok(pipe) => (pipe.0.as_raw_fd(), pipe.1.as_raw_fd()),
            Err(e) => return Err(Error::Connection(format!("no wake pipe: {e}"))),
        };
        interrupt.watch_with(write_end, || {
            if interrupt.is_triggered() {
                return Err(Error::Interrupted);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Error::Connection("timed out waiting for Redis".into()));
            }
            let mut fds = [
                libc::pollfd {
                    fd,
                    events: if write { libc::POLLOUT } else { libc::POLLIN },
                    revents: 0,
                },
                libc::pollfd {
                    fd: read_end,
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            let ms = left.as_millis().clamp(1, i32::MAX as u128) as i32;
            // SAFETY: `fds` is a live array of two pollfd.
            unsafe { libc::poll(fds.as_mut_ptr(), 2, ms) };
            if fds[1].revents != 0 {
                drain(read_end);
            }
            Ok(())
        })
    })
}

fn drain(fd: RawFd) {
    let mut sink = [0u8; 64];
    // SAFETY: reads into a live buffer from a non-blocking pipe.
    while unsafe { libc::read(fd, sink.as_mut_ptr().cast(), sink.len()) } > 0 {}
}

thread_local! {
    /// This thread's wake pipe (read end, write end), non-blocking.
    static WAKE: std::io::Result<(OwnedFd, OwnedFd)> = wake_pipe();
}

fn wake_pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    use std::os::fd::FromRawFd;
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 fills the two-element array on success.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by no one else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// The first RESP2 value in `buf` and its length, or `None` until it is all
/// there. Parsed here rather than by the redis crate's general parser, which
/// costs as much as the rest of a fetch's own work; error replies (rare: a
/// NOSCRIPT) and anything unexpected still go through that parser.
fn parse_value(buf: &[u8]) -> Result<Option<(Value, usize)>> {
    let Some(line_end) = buf.windows(2).position(|w| w == b"\r\n") else {
        return Ok(None);
    };
    let after = line_end + 2;
    let number = || -> Option<i64> { std::str::from_utf8(&buf[1..line_end]).ok()?.parse().ok() };
    let parsed = match (buf[0], number()) {
        (b':', Some(n)) => (Value::Int(n), after),
        (b'$' | b'*', Some(n)) if n < 0 => (Value::Nil, after),
        (b'$', Some(n)) => {
            let end = after.saturating_add(n as usize);
            if buf.len() < end.saturating_add(2) {
                return Ok(None);
            }
            (Value::BulkString(buf[after..end].to_vec()), end + 2)
        }
        (b'*', Some(n)) => {
            let mut items = Vec::with_capacity((n as usize).min(16));
            let mut at = after;
            for _ in 0..n {
                let Some((item, len)) = parse_value(&buf[at..])? else {
                    return Ok(None);
                };
                items.push(item);
                at += len;
            }
            (Value::Array(items), at)
        }
        (b'+' | b'-', _) => (redis::parse_redis_value(&buf[..after])?, after),
        _ => (redis::parse_redis_value(buf)?, buf.len()),
    };
    Ok(Some(parsed))
}

#[cfg(test)]
mod tests {
    use super::parse_value;
    use redis::Value;

    #[test]
    fn parse_value_needs_the_whole_value() {
        let reply = b"*3\r\n$7\r\ndefault\r\n$3\r\njob\r\n:0\r\n";
        let whole = parse_value(reply).unwrap().unwrap();
        assert_eq!(whole.1, reply.len());
        assert_eq!(whole.0, redis::parse_redis_value(reply).unwrap());
        for cut in 0..reply.len() {
            assert!(
                parse_value(&reply[..cut]).unwrap().is_none(),
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn parse_value_reads_nil_status_and_errors() {
        assert_eq!(
            parse_value(b"$-1\r\n+OK\r\n").unwrap(),
            Some((Value::Nil, 5))
        );
        assert_eq!(parse_value(b"*-1\r\n").unwrap(), Some((Value::Nil, 5)));
        assert_eq!(parse_value(b"+OK\r\n").unwrap(), Some((Value::Okay, 5)));
        let (error, len) = parse_value(b"-NOSCRIPT x\r\n").unwrap().unwrap();
        assert!(matches!(error, Value::ServerError(e) if e.code() == "NOSCRIPT"));
        assert_eq!(len, 13);
    }
}

/// A thread's direct connection to one capsule's Redis.
struct Slot {
    capsule: u64,
    conn: Option<Direct>,
    /// After a failed connection attempt: when to try again.
    retry_at: Option<Instant>,
}

thread_local! {
    static SLOTS: std::cell::RefCell<Vec<Slot>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// How long a thread uses the runtime's connection after it failed to open
/// its own.
const RETRY_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

fn with_slot<T>(capsule: u64, f: impl FnOnce(&mut Slot) -> T) -> T {
    SLOTS.with(|slots| {
        let mut slots = slots.borrow_mut();
        let at = match slots.iter().position(|s| s.capsule == capsule) {
            Some(at) => at,
            None => {
                slots.push(Slot {
                    capsule,
                    conn: None,
                    retry_at: None,
                });
                slots.len() - 1
            }
        };
        f(&mut slots[at])
    })
}

/// This thread's connection for `capsule`, taken out for one request.
pub(crate) fn take(capsule: u64) -> Option<Direct> {
    with_slot(capsule, |slot| slot.conn.take().filter(Direct::is_ours))
}

/// Gives a connection back after a request that left it clean.
pub(crate) fn put(capsule: u64, conn: Direct) {
    with_slot(capsule, |slot| slot.conn = Some(conn));
}

/// True if this thread has no connection for `capsule` and may open one.
pub(crate) fn wanted(capsule: u64) -> bool {
    with_slot(capsule, |slot| {
        !slot.conn.as_ref().is_some_and(Direct::is_ours)
            && slot.retry_at.map_or(true, |at| Instant::now() >= at)
    })
}

/// Records the outcome of an attempt to open a connection.
pub(crate) fn opened(capsule: u64, conn: Option<Direct>) {
    with_slot(capsule, |slot| {
        slot.retry_at = conn.is_none().then(|| Instant::now() + RETRY_AFTER);
        slot.conn = conn;
    });
}

/// True if this thread has a live connection for `capsule`.
pub(crate) fn has(capsule: u64) -> bool {
    with_slot(capsule, |slot| {
        slot.conn.as_ref().is_some_and(Direct::is_ours)
    })
}
