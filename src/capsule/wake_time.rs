//! When the first window opens, read again on the tracking connection after
//! a message said only that it moved (see `Doorbell::heard_wake_time`):
//! plain reads that Redis tracks, then the timed ring, and no fetcher woken.
//! A window's last parked job deletes `rate_wake` and `rate_due` as it
//! goes: with a ring instead, a waiter looked and the bell was armed again,
//! two or three scripts more at the end of every rate's backlog (0.2 a
//! window's opening in bin/bench's rate section, 16 openings a run).

use std::sync::Weak;
use std::time::{Duration, Instant};

use super::look::counted_from;
use super::Inner;
use crate::{keys, Result};

impl Inner {
    /// Reads when the first window opens again, as a task on the runtime.
    pub(super) fn read_wake_time(me: &Weak<Inner>) {
        let (Some(inner), Ok(handle)) = (me.upgrade(), crate::runtime::handle()) else {
            return;
        };
        crate::runtime::detach(&handle, async move {
            let bell = &inner.doorbell;
            bell.wake_read_starts();
            let sent = Instant::now();
            match inner.wake_time().await {
                Ok(Some((opens, now))) => {
                    let after = Duration::from_micros(opens.saturating_sub(now).max(0) as u64);
                    bell.ring_at(
                        counted_from(Instant::now(), Some(sent)) + after,
                        Some(opens),
                    );
                }
                Ok(None) => {}
                Err(_) => bell.wake_read_failed(),
            }
        });
    }

    /// `rate_wake`, else `rate_due` (as the arming reads them, in the same
    /// order: `rate_due` is tracked only while `rate_wake` is absent, since
    /// it changes at every opening), each after `CLIENT CACHING yes`, and
    /// Redis's clock: when the first window opens, and now, in microseconds
    /// of Redis's clock; `None` where no rate holds jobs parked.
    async fn wake_time(&self) -> Result<Option<(i64, i64)>> {
        let mut conn = self.redis.conn().await?;
        for key in keys::WAKE_TIME {
            let mut pipe = redis::pipe();
            pipe.cmd("CLIENT").arg("CACHING").arg("YES").ignore();
            pipe.cmd("GET").arg(key).cmd("TIME");
            let (value, (secs, micros)): (Option<String>, (i64, i64)) =
                pipe.query_async(&mut conn).await?;
            // Written by the scripts as a number, which may read as a float.
            if let Some(opens) = value.and_then(|v| v.parse::<f64>().ok()) {
                return Ok(Some((opens as i64, secs * 1_000_000 + micros)));
            }
        }
        Ok(None)
    }
}
