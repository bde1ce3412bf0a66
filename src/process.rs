//! This process's id, cached, and [`ForkLocal`], the one way the core keeps
//! a forked child off its parent's connections, runtime, ledger and doorbell:
//! the hot path checks the id, and getpid(2) is a system call every time. A
//! fork handler empties the cache in the child.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

/// 0 while not cached (no process has id 0).
static PID: AtomicU32 = AtomicU32::new(0);
/// Whether the fork handler is in place, without which nothing is cached.
static CACHEABLE: OnceLock<bool> = OnceLock::new();

extern "C" fn forget_in_child() {
    PID.store(0, Ordering::Relaxed);
}

/// The id of the calling process.
pub(crate) fn id() -> u32 {
    let cached = PID.load(Ordering::Relaxed);
    if cached != 0 {
        return cached;
    }
    let pid = std::process::id();
    // SAFETY: the handler only stores to an atomic, which is
    // async-signal-safe, as a handler run in a forked child must be.
    let cacheable = *CACHEABLE
        .get_or_init(|| unsafe { libc::pthread_atfork(None, None, Some(forget_in_child)) } == 0);
    if cacheable {
        PID.store(pid, Ordering::Relaxed);
    }
    pid
}

/// What becomes of a parent's value in a forked child.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Stale {
    /// Dropped: its destructor only releases what the child holds too (a
    /// file descriptor's copy, memory).
    Drop,
    /// Leaked: its destructor would act on the parent's behalf (join the
    /// parent's threads, which do not exist here, or close a socket the
    /// parent still uses through a shared state).
    Forget,
}

/// A value that belongs to one process: a forked child that reaches for it
/// finds it reset to its default (or, with [`ForkLocal::is_current`], can
/// tell it is not its own), as it holds none of its parent's jobs, sockets
/// or threads. Checking costs an atomic load (see [`id`]).
pub(crate) struct ForkLocal<T> {
    /// The owner's id; 0 until a process first claims the value.
    pid: u32,
    value: T,
    stale: Stale,
}

impl<T> ForkLocal<T> {
    /// `value`, owned by the first process that reads it.
    pub(crate) const fn new(value: T, stale: Stale) -> Self {
        Self {
            pid: 0,
            value,
            stale,
        }
    }

    /// `value`, owned by the calling process.
    pub(crate) fn here(value: T, stale: Stale) -> Self {
        Self {
            pid: id(),
            value,
            stale,
        }
    }

    /// True if the calling process owns the value (or nobody claimed it yet).
    #[inline]
    pub(crate) fn is_current(&self) -> bool {
        self.pid == 0 || self.pid == id()
    }

    /// The value, unchecked: for a caller that checked [`Self::is_current`]
    /// when it took the value into its hands.
    #[inline]
    pub(crate) fn unchecked(&mut self) -> &mut T {
        &mut self.value
    }
}

impl<T: Default> ForkLocal<T> {
    /// This process's value: the default if a parent's was there.
    #[inline]
    pub(crate) fn get(&mut self) -> &mut T {
        let pid = id();
        if self.pid != pid {
            if self.pid != 0 {
                let stale = std::mem::take(&mut self.value);
                match self.stale {
                    Stale::Drop => drop(stale),
                    Stale::Forget => std::mem::forget(stale),
                }
            }
            self.pid = pid;
        }
        &mut self.value
    }
}

#[cfg(test)]
mod tests {
    use super::{ForkLocal, Stale};

    /// Runs `child` in a forked child process; true if it returned true.
    fn in_child(child: impl FnOnce() -> bool) -> bool {
        // SAFETY: the child runs only `child` (no locks the fork could have
        // left held) and leaves with _exit.
        match unsafe { libc::fork() } {
            0 => {
                let ok = child();
                unsafe { libc::_exit(if ok { 0 } else { 1 }) }
            }
            -1 => panic!("fork failed"),
            pid => {
                let mut status = 0;
                // SAFETY: waits for the child just forked.
                unsafe { libc::waitpid(pid, &mut status, 0) };
                libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
            }
        }
    }

    #[test]
    fn a_fork_local_value_is_reset_in_a_forked_child() {
        // Forget: the child must not free (another thread may hold the allocator).
        let mut local = ForkLocal::new(Vec::<u8>::new(), Stale::Forget);
        local.get().push(7);
        assert_eq!(local.get(), &[7]);
        assert!(in_child(
            move || local.get().is_empty() && local.is_current()
        ));
    }

    #[test]
    fn a_value_made_here_is_not_a_forked_childs() {
        let local = ForkLocal::here(1u8, Stale::Forget);
        assert!(local.is_current());
        assert!(in_child(move || !local.is_current()));
    }

    #[test]
    fn is_the_process_id_and_renewed_in_a_forked_child() {
        assert_eq!(super::id(), std::process::id());
        // SAFETY: the child only compares ids and leaves with _exit.
        match unsafe { libc::fork() } {
            0 => {
                let same = super::id() == std::process::id();
                unsafe { libc::_exit(if same { 0 } else { 1 }) }
            }
            -1 => panic!("fork failed"),
            child => {
                let mut status = 0;
                // SAFETY: waits for the child just forked.
                unsafe { libc::waitpid(child, &mut status, 0) };
                assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
            }
        }
    }
}
