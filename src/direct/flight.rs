//! One request on a direct connection, driven by the calling thread: it
//! writes what the socket takes and reads a reply already there; only a reply
//! still to come is waited for (see `poll.rs`). A request whose caller walks
//! away is finished on the runtime.

use std::io::ErrorKind;
use std::time::Instant;

use redis::Value;

use super::conn::Direct;
use super::poll::wait_for;
use super::resp::parse_value;
use crate::runtime::handle;
use crate::script::loaded_already;
use crate::{Error, Interrupt, Result};

/// What one read asks the socket for: a fetch's reply fits; a longer one
/// takes more reads.
const READ: usize = 4 * 1024;

pub(super) fn lost() -> Error {
    Error::Connection("the connection to Redis was lost".into())
}

/// One request on a [`Direct`] connection and its reply (`replies` replies
/// for a pipeline, of which the last is kept, errors before it failing; or
/// all of them, as an array: [`Flight::start_all`]).
pub(crate) struct Flight {
    conn: Option<Direct>,
    out: Vec<u8>,
    written: usize,
    replies: usize,
    all: bool,
    buf: Vec<u8>,
    reply: Option<Value>,
}

impl Flight {
    /// Writes what the socket takes now and reads a reply already there,
    /// without blocking.
    pub(crate) fn start(conn: Direct, request: Vec<u8>, replies: usize) -> Flight {
        Self::begin(conn, request, replies, false)
    }

    /// [`Flight::start`] for a pipeline whose replies are all wanted: its
    /// reply is an array of them, errors included.
    pub(crate) fn start_all(conn: Direct, request: Vec<u8>, replies: usize) -> Flight {
        Self::begin(conn, request, replies, true)
    }

    fn begin(conn: Direct, request: Vec<u8>, replies: usize, all: bool) -> Flight {
        let mut flight = Flight {
            conn: Some(conn),
            out: request,
            written: 0,
            replies,
            all,
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
                let fd = self.conn.as_mut().ok_or_else(lost)?.stream().fd();
                wait_for(fd, want_write, interrupt, deadline)?;
            }
        }
    }

    /// The reply, if it is here (see [`Flight::is_ready_value`]).
    pub(crate) fn peek(&self) -> Option<&Value> {
        self.reply.as_ref()
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
            match conn.stream().write(&self.out[self.written..]) {
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
        loop {
            if let Some(value) = self.parsed()? {
                self.reply = Some(value);
                return Ok(true);
            }
            let conn = self.conn.as_mut().ok_or_else(lost)?;
            // Read straight into the reply's buffer, not through one on the
            // stack: a frame larger than a page has each of its pages
            // touched, and a thread's stack pages stay resident.
            let at = self.buf.len();
            self.buf.resize(at + READ, 0);
            let read = conn.stream().read(&mut self.buf[at..]);
            self.buf.truncate(at + read.as_ref().map_or(0, |n| *n));
            match read {
                Ok(0) => return Err(self.fail()),
                Ok(_) => moved = true,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(moved),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return Err(self.fail()),
            }
        }
    }

    /// The last of the replies once all are in; the first error reply
    /// before it is returned instead, but for a load that found the
    /// library there ([`loaded_already`]). All are read either way: the
    /// connection is then ready for its next request.
    fn parsed(&mut self) -> Result<Option<Value>> {
        let mut at = 0;
        let mut reply = None;
        let mut all = Vec::with_capacity(if self.all { self.replies } else { 0 });
        for _ in 0..self.replies {
            let Some((value, len)) = parse_value(&self.buf[at..])? else {
                return Ok(None);
            };
            at += len;
            if self.all {
                all.push(value);
            } else if !matches!(reply, Some(Value::ServerError(_))) && !loaded_already(&value) {
                reply = Some(value);
            }
        }
        self.buf.drain(..at);
        Ok(if self.all {
            Some(Value::Array(all))
        } else {
            reply
        })
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
