//! Queues as a control plane sees them: their limits, busy slots by
//! capsule, backlog and pause, read in one round trip; pausing and
//! unpausing; and the names of every queue the gem holds a key of. Needs no
//! capsule (see admin/mod.rs).
//!
//! A pause is one key per queue (`keys::paused`): while it exists the fetch
//! script finds the queue not eligible, whatever its limits, and leaves the
//! limits as they are. A pause for a time is the same key with a TTL, so it
//! ends by itself, with no process alive to end it. Deleting the key (or
//! its expiry) is a write Redis reports to every capsule's doorbell, which
//! tracks the key while its fetchers sleep: they wake and take the queue's
//! jobs at once.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::runtime::wait_for;
use crate::scan;
use crate::{keys, Adaptive, Error, Interrupt, LimitValue, Rate, Result};

use super::Limits;

/// One queue as Redis holds it now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueState {
    pub name: String,
    /// As the fetch reads it (a broken value reads as 0): an adaptive
    /// limit's limit in force.
    pub limit: LimitValue,
    /// An adaptive limit's limit in force and range; `None` for a fixed one.
    pub adaptive: Option<Adaptive>,
    pub process_limit: LimitValue,
    /// A fair queue's limit (`fair_limits:`, the stored value of its job
    /// limit [`keys::fair_queue_id`]), as the fetch reads it; `None` for a
    /// queue that is not fair.
    pub fair: LimitValue,
    /// Busy slots per capsule UUID, in the order the busy list first names
    /// each (the oldest booking first).
    pub busy: Vec<(String, u64)>,
    /// Jobs waiting in Sidekiq's list of the queue.
    pub queued: u64,
    pub pause: Pause,
    /// Its rate, as the fetch reads it (a broken one reads as
    /// [`Rate::BROKEN`]); `None` without one.
    pub rate: Option<Rate>,
}

/// Whether a queue is paused, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pause {
    None,
    /// Until unpaused.
    Indefinite,
    /// Ends by itself after this long (from the read).
    For(Duration),
}

impl QueueState {
    /// Busy slots across every capsule.
    pub fn busy_total(&self) -> u64 {
        self.busy.iter().map(|(_, n)| n).sum()
    }
}

impl Limits {
    /// Each of `queues` as Redis holds it now, in one round trip.
    pub fn queue_states<S: AsRef<str>>(
        &self,
        queues: &[S],
        interrupt: &Interrupt,
    ) -> Result<Vec<QueueState>> {
        let names: Vec<String> = queues.iter().map(|q| q.as_ref().to_owned()).collect();
        if names.is_empty() {
            return Ok(Vec::new());
        }
        let redis = self.redis().clone();
        wait_for(interrupt, self.timeout(), async move {
            let mut pipe = redis::pipe();
            for name in &names {
                pipe.cmd("MGET")
                    .arg(keys::limit(name))
                    .arg(keys::limit_range(name))
                    .arg(keys::adaptive(name))
                    .arg(keys::job_limit(&keys::fair_queue_id(name)));
                pipe.cmd("GET").arg(keys::process_limit(name));
                pipe.cmd("LRANGE").arg(keys::busy(name)).arg(0).arg(-1);
                pipe.cmd("LLEN").arg(keys::queue(name));
                pipe.cmd("PTTL").arg(keys::paused(name));
                pipe.cmd("GET").arg(keys::rate(name));
            }
            type Reply = (
                (
                    Option<Vec<u8>>,
                    Option<Vec<u8>>,
                    Option<Vec<u8>>,
                    Option<Vec<u8>>,
                ),
                Option<Vec<u8>>,
                Vec<String>,
                u64,
                i64,
                Option<Vec<u8>>,
            );
            let flat: Vec<redis::Value> = pipe.query_async(&mut redis.conn().await?).await?;
            let replies: Vec<Reply> = flat
                .chunks(6)
                .map(|c| redis::from_redis_value(&redis::Value::Array(c.to_vec())))
                .collect::<redis::RedisResult<_>>()?;
            Ok(names
                .into_iter()
                .zip(replies)
                .map(
                    |(name, (limits, process_limit, busy, queued, pttl, rate))| {
                        let parse = |raw: Option<Vec<u8>>| {
                            let raw = raw.as_deref().map(String::from_utf8_lossy);
                            crate::limits::parse_stored(raw.as_deref())
                        };
                        let (limit, range, adaptive, fair) = limits;
                        let text = |raw: Option<Vec<u8>>| {
                            raw.map(|r| String::from_utf8_lossy(&r).into_owned())
                        };
                        let limit = parse(limit);
                        let adaptive =
                            Adaptive::of(limit, text(range).as_deref(), text(adaptive).as_deref());
                        let rate = rate.as_deref().map(String::from_utf8_lossy);
                        QueueState {
                            name,
                            limit: adaptive.map_or(limit, |a| Some(a.value)),
                            adaptive,
                            process_limit: parse(process_limit),
                            fair: parse(fair),
                            busy: count(busy),
                            queued,
                            pause: pause(pttl),
                            rate: Rate::parse_stored(rate.as_deref()),
                        }
                    },
                )
                .collect())
        })
    }

    /// Pauses `queue`: no fetch takes its jobs until [`Limits::unpause`],
    /// or, with `duration`, until that has passed. Its limits stay as they
    /// are; running jobs are untouched. A pause replaces the one before.
    pub fn pause(
        &self,
        queue: &str,
        duration: Option<Duration>,
        interrupt: &Interrupt,
    ) -> Result<()> {
        let millis = match duration {
            None => None,
            Some(d) if d.is_zero() => {
                return Err(Error::Invalid(format!(
                    "a pause of queue {queue:?} must last a positive time"
                )))
            }
            // At least a millisecond: PX takes whole ones.
            Some(d) => Some(u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)),
        };
        let redis = self.redis().clone();
        let key = keys::paused(queue);
        wait_for(interrupt, self.timeout(), async move {
            let mut cmd = redis::cmd("SET");
            cmd.arg(key).arg(1);
            if let Some(ms) = millis {
                cmd.arg("PX").arg(ms);
            }
            cmd.query_async::<()>(&mut *redis.writer().await?).await?;
            Ok(())
        })
    }

    /// Ends `queue`'s pause; its fetchers, asleep in every process, wake.
    /// True if it was paused.
    pub fn unpause(&self, queue: &str, interrupt: &Interrupt) -> Result<bool> {
        let redis = self.redis().clone();
        let key = keys::paused(queue);
        wait_for(interrupt, self.timeout(), async move {
            let deleted: u64 = redis::cmd("DEL")
                .arg(key)
                .query_async(&mut *redis.writer().await?)
                .await?;
            Ok(deleted > 0)
        })
    }

    /// Every queue the gem holds a key of (a stored limit, a busy list, a
    /// pause), sorted, found by `SCAN` (incremental: never blocks Redis).
    pub fn known_queues(&self, interrupt: &Interrupt) -> Result<Vec<String>> {
        let redis = self.redis().clone();
        wait_for(interrupt, self.timeout() * 4, async move {
            let found = scan::keys(&mut redis.conn().await?, keys::QUEUE_PATTERN).await?;
            let names: BTreeSet<&str> = found.iter().filter_map(|k| keys::queue_of(k)).collect();
            Ok(names.into_iter().map(str::to_owned).collect())
        })
    }
}

/// Entries of a busy list counted per capsule, in order of first entry.
fn count(busy: Vec<String>) -> Vec<(String, u64)> {
    let mut counts: Vec<(String, u64)> = Vec::new();
    for uuid in busy {
        match counts.iter_mut().find(|(u, _)| *u == uuid) {
            Some((_, n)) => *n += 1,
            None => counts.push((uuid, 1)),
        }
    }
    counts
}

/// A `PTTL` reply: -2 no key, -1 no TTL.
fn pause(pttl: i64) -> Pause {
    match pttl {
        -1 => Pause::Indefinite,
        ms if ms >= 0 => Pause::For(Duration::from_millis(ms.unsigned_abs())),
        _ => Pause::None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_entries_count_per_capsule_in_order() {
        let busy = ["b", "a", "b", "b", "c"].map(String::from).to_vec();
        assert_eq!(
            count(busy),
            vec![("b".into(), 3), ("a".into(), 1), ("c".into(), 1)]
        );
    }

    #[test]
    fn a_pttl_reads_as_a_pause() {
        assert_eq!(pause(-2), Pause::None);
        assert_eq!(pause(-1), Pause::Indefinite);
        assert_eq!(pause(0), Pause::For(Duration::ZERO));
        assert_eq!(pause(1500), Pause::For(Duration::from_millis(1500)));
    }
}
