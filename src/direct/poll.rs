//! Waiting for a direct connection's socket without the GVL: poll(2) on the
//! socket and on this thread's wake pipe, which the caller's [`Interrupt`]
//! writes to when it fires.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::Instant;

use crate::{Error, Interrupt, Result};

/// Blocks in poll(2) until `fd` is readable (or writable), the interrupt's
/// pipe is written, or `deadline`.
pub(super) fn wait_for(
    fd: RawFd,
    write: bool,
    interrupt: &Interrupt,
    deadline: Instant,
) -> Result<()> {
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
