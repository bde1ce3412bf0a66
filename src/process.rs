//! This process's id, cached: the hot path checks it (a forked child must
//! not use its parent's connections, runtime or ledger), and getpid(2) is a
//! system call every time. A fork handler empties the cache in the child.

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

#[cfg(test)]
mod tests {
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
