use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use tokio::sync::Notify;

/// A one-shot signal that cuts a blocking call short.
///
/// A binding triggers it from its interpreter's "unblock" callback (for Ruby:
/// the UBF run on `Thread#raise`/`Thread#kill`). Triggering is cheap and safe
/// from any thread, any number of times.
#[derive(Debug)]
pub struct Interrupt {
    fired: AtomicBool,
    notify: Notify,
    /// The write end of the pipe a thread blocked in poll(2) watches, or -1.
    wake: AtomicI32,
}

impl Default for Interrupt {
    fn default() -> Self {
        Self {
            fired: AtomicBool::new(false),
            notify: Notify::new(),
            wake: AtomicI32::new(-1),
        }
    }
}

impl Interrupt {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn trigger(&self) {
        self.fired.store(true, Ordering::SeqCst);
        // notify_one stores a permit, so a waiter that arrives later still wakes.
        self.notify.notify_one();
        let fd = self.wake.load(Ordering::SeqCst);
        if fd >= 0 {
            let byte = 1u8;
            // SAFETY: writes one byte from a live buffer; the fd stays open
            // while it is registered (see `watch_with`). A full pipe already
            // wakes the poller, so the result does not matter.
            let _ = unsafe { libc::write(fd, (&byte as *const u8).cast(), 1) };
        }
    }

    pub fn is_triggered(&self) -> bool {
        self.fired.load(Ordering::SeqCst)
    }

    pub(crate) async fn triggered(&self) {
        while !self.is_triggered() {
            self.notify.notified().await;
        }
    }

    /// Runs `wait` with `fd` (a pipe's write end) written to on a trigger,
    /// so that a poll(2) on its read end wakes. A trigger before this call
    /// is seen by `is_triggered`, which callers check after registering.
    pub(crate) fn watch_with<T>(&self, fd: RawFd, wait: impl FnOnce() -> T) -> T {
        self.wake.store(fd, Ordering::SeqCst);
        let result = wait();
        self.wake.store(-1, Ordering::SeqCst);
        result
    }
}
