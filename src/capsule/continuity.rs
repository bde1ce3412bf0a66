//! Whether a capsule's beats went on without a break, which decides what
//! its next beat does first, and whether it may reap (see beat.rs).

use std::time::{Duration, Instant};

/// Whether this capsule's beats went on without a break: a break (a beat
/// that failed, or one that came later than a heartbeat's expiry after the
/// last) means other capsules may have been unable to beat too, for the
/// same reason (Redis down, restarting or unreachable; the machine frozen).
#[derive(Debug, Default)]
pub(super) struct Continuity {
    pub(super) failed: bool,
    pub(super) last_ok: Option<Instant>,
    /// The stretch of beats without a break that the last one belongs to.
    pub(super) stretch: Option<Stretch>,
}

/// A stretch of registrations and beats without a break (not a run: a
/// run is a streak of jobs, see hand_over/memory.rs).
#[derive(Debug, Clone, Copy)]
pub(super) struct Stretch {
    pub(super) since: Instant,
    /// At its first registration, another capsule had beaten within an
    /// expiry (see `keys::LAST_BEAT`).
    pub(super) vouched: bool,
}

impl Continuity {
    pub(super) fn broken(&self, now: Instant, expiry: Duration) -> bool {
        self.failed
            || self
                .last_ok
                .is_some_and(|at| now.duration_since(at) > expiry)
    }

    /// The stretch a registration starting now belongs to: the current one,
    /// unless there is none or it broke off.
    pub(super) fn current(&self, now: Instant, expiry: Duration) -> Option<Stretch> {
        if self.broken(now, expiry) {
            None
        } else {
            self.stretch
        }
    }

    /// A registration or beat of `stretch` went through (`Some`) or failed.
    pub(super) fn record(&mut self, stretch: Option<Stretch>) {
        self.failed = stretch.is_none();
        if stretch.is_some() {
            self.last_ok = Some(Instant::now());
            self.stretch = stretch;
        }
    }
}

impl Stretch {
    /// A capsule is a witness of the others' silence, which it may then
    /// take for death: it knew Redis served beats when its stretch began, or
    /// its own beats have gone on for an expiry since. A capsule that
    /// started, or came back, while every capsule was cut off from Redis
    /// cannot tell the living from the dead before they had an expiry to
    /// beat again.
    pub(super) fn witness(&self, expiry: Duration) -> bool {
        self.vouched || self.since.elapsed() >= expiry
    }
}
