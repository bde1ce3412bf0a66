//! Whether a capsule's beats went on without a break, which decides what
//! its next beat does first (see beat.rs).

use std::time::{Duration, Instant};

/// Whether this capsule's beats went on without a break: a break (a beat
/// that failed, or one that came later than a heartbeat's expiry after the
/// last) means other capsules may have been unable to beat too, for the
/// same reason (Redis down, restarting or unreachable; the machine frozen).
#[derive(Debug, Default)]
pub(super) struct Continuity {
    pub(super) failed: bool,
    pub(super) last_ok: Option<Instant>,
}

impl Continuity {
    pub(super) fn broken(&self, now: Instant, expiry: Duration) -> bool {
        self.failed
            || self
                .last_ok
                .is_some_and(|at| now.duration_since(at) > expiry)
    }
}
