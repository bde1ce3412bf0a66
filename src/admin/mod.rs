//! Administration without a capsule: reading and setting limits, reading
//! queues, job limits and the registered capsules, pausing queues. Needs a
//! Redis connection, not a capsule, so that a control plane (a console API,
//! a CLI, a web UI) can use it on its own; a capsule's own methods delegate
//! to one over its connection.
//!
//! [`Limits`] is the handle; each file adds what it administers:
//! queue_limits.rs (queues' limits and busy slots), queues.rs (a queue's
//! state, pauses, the queues the gem knows of), job_limits.rs, registered.rs
//! (the registered capsules), rates.rs (queues' and job limits' rates),
//! release_all.rs (every job the gem holds back to its queue: the way out),
//! waiting.rs (the jobs waiting in queues, parked ones included),
//! back_offs.rs (job limits backed off by what they protect), fair_share.rs
//! (the tenants sharing a fair class's slots), format.rs (the data format:
//! read, pinned, let be).

mod back_offs;
mod fair_share;
mod format;
pub(crate) mod job_limits;
mod queue_limits;
mod queues;
mod rates;
mod registered;
mod release_all;
mod waiting;

use std::sync::Arc;
use std::time::Duration;

use crate::connection::Redis;
use crate::ConnectionSettings;

pub(crate) use back_offs::BACK_OFF_SCRIPT;
pub use back_offs::{BackOff, BackedOff};
pub use fair_share::{FairClass, FairTenant};
pub use format::{DataFormat, FormatChange};
pub use job_limits::{BackOffState, JobLimitState};
pub use queue_limits::StoredLimit;
pub(crate) use queue_limits::{limit_defaults, range_defaults, rate_defaults, write_defaults};
pub use queues::{Pause, QueueState};
pub use rates::{RateOf, RateWindow};
pub use registered::CapsuleEntry;
pub(crate) use registered::INFO_TTL_SECS;
pub use release_all::{QueueReleased, Released};
pub use waiting::{QueueWaiting, Waiting};

/// The administration of one Redis (see the module documentation), named
/// for what it first administered: queues' limits. Cheap to clone; every method blocks the
/// calling thread (not the runtime) and returns early if `interrupt` fires.
#[derive(Clone)]
pub struct Limits {
    redis: Arc<Redis>,
    /// How long a caller waits for a reply.
    timeout: Duration,
}

impl Limits {
    /// Limits on the Redis of `settings`, through a connection of their
    /// own, opened on first use.
    pub fn new(settings: &ConnectionSettings) -> Self {
        Self::over(Arc::new(Redis::new(settings, |_| {})), settings.timeout)
    }

    /// Limits through `redis` (a capsule's connection, whose writes its
    /// doorbell hears of).
    pub(crate) fn over(redis: Arc<Redis>, timeout: Duration) -> Self {
        Self { redis, timeout }
    }

    pub(crate) fn redis(&self) -> &Arc<Redis> {
        &self.redis
    }

    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }
}
