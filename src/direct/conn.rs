//! A direct connection: a plain, non-blocking socket in RESP2 (TCP or Unix),
//! the process that opened it and the master it was opened to. Opened and
//! set up by open.rs; driven by flight.rs.

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, RawFd};

use crate::process::{ForkLocal, Stale};

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
    /// A connection to the master of `generation` on `stream` (connected,
    /// non-blocking), not yet set up (see open.rs).
    pub(super) fn new(stream: Stream, generation: u64) -> Direct {
        Direct {
            stream: ForkLocal::here(stream, Stale::Drop),
            generation,
        }
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
