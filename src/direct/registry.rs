//! Each thread's direct connections, one per capsule: taken out for a
//! request, given back when it left the connection clean.

use std::time::Instant;

use super::conn::Direct;

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

/// This thread's connection for `capsule`, taken out for one request, if it
/// was opened to the master of `generation` (see sentinel.rs).
pub(crate) fn take(capsule: u64, generation: u64) -> Option<Direct> {
    with_slot(capsule, |slot| {
        slot.conn.take().filter(|c| c.is_current(generation))
    })
}

/// Gives a connection back after a request that left it clean.
pub(crate) fn put(capsule: u64, conn: Direct) {
    with_slot(capsule, |slot| slot.conn = Some(conn));
}

/// True if this thread has no connection for `capsule` to the master of
/// `generation` and may open one.
pub(crate) fn wanted(capsule: u64, generation: u64) -> bool {
    with_slot(capsule, |slot| {
        !slot.conn.as_ref().is_some_and(|c| c.is_current(generation))
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

/// True if this thread has a live connection for `capsule` to the master of
/// `generation`.
pub(crate) fn has(capsule: u64, generation: u64) -> bool {
    with_slot(capsule, |slot| {
        slot.conn.as_ref().is_some_and(|c| c.is_current(generation))
    })
}
