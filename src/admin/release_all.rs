//! The way out of the gem (`sidekiq-limits release --all`): every job it
//! holds outside Sidekiq's queues goes back to the front of its queue, so
//! that a plain Sidekiq fetch (`BasicFetch`), which knows nothing of the
//! gem's keys, runs each once. Those jobs are the parked ones (behind a job
//! limit or its rate: unpark.lua) and those in the in-progress lists of
//! capsules that are not alive (the reaper's reap.lua, as a beat would run
//! it). A live capsule would race it (parking jobs again, holding jobs it
//! runs): it refuses while one is registered and beating, unless forced;
//! a live capsule's own jobs are never touched. Each step is one atomic
//! script over a bounded batch, run as its own round trip: Redis is never
//! held long, and a step interrupted or failed leaves every job in exactly
//! one place (the next run goes on from there).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use crate::connection::Redis;
use crate::reaper::{busy_lists, JobRef, Reap, Reaper};
use crate::runtime::wait_for;
use crate::scan;
use crate::script::{LuaScript, UNPARK};
use crate::{keys, CapsuleEntry, Interrupt, Result};

use super::Limits;

static UNPARK_SCRIPT: LazyLock<LuaScript> = LazyLock::new(|| LuaScript::new(UNPARK));

/// Parked jobs one step moves at most.
const BATCH: u64 = 500;

/// What a release did, or why it did nothing.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Released {
    /// The live capsules it found (registered, their heartbeat present):
    /// when it was not forced, it refused and did nothing else; forced, it
    /// left their in-progress jobs to them.
    pub live: Vec<CapsuleEntry>,
    /// It refused: capsules live, and it was not forced.
    pub refused: bool,
    /// What each queue got back, by name.
    pub queues: Vec<QueueReleased>,
    /// Jobs that went to Sidekiq's dead set instead: recovered from dead
    /// capsules more than `max_recoveries` times, or parked naming no
    /// queue (their queue then reads "").
    pub dead: Vec<JobRef>,
    /// Capsules that were not alive whose jobs and slots it freed.
    pub capsules: u64,
    /// Milliseconds the outage key has left (`keys::OUTAGE`), if it stood:
    /// a capsule that looks dead may then be alive (its beats broke off
    /// with Redis's), so none was reaped; run again once it is gone.
    pub outage_left_ms: Option<u64>,
}

/// The jobs one queue got back at its front.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct QueueReleased {
    pub queue: String,
    /// That were parked behind a job limit or its rate.
    pub parked: u64,
    /// That capsules which are not alive held in progress.
    pub recovered: u64,
}

impl Limits {
    /// Puts every parked job, and every in-progress job of a capsule that
    /// is not alive, back at the front of its queue, each once, oldest
    /// first out; clears what referenced them (the limits' places in the
    /// sets of parked and rate-parked limits, the dead capsules' slots,
    /// lists and registration). Refuses, doing nothing, while a capsule is
    /// registered and beating, unless `force`. `max_recoveries`: as the
    /// reaper's (a job recovered more times goes to the dead set).
    pub fn release_all(
        &self,
        force: bool,
        max_recoveries: u32,
        interrupt: &Interrupt,
    ) -> Result<Released> {
        let capsules = self.capsules(interrupt)?;
        let (live, dead): (Vec<_>, Vec<_>) = capsules
            .into_iter()
            .partition(|c| c.heartbeat_left_ms.is_some());
        let mut released = Released {
            refused: !live.is_empty() && !force,
            live,
            ..Released::default()
        };
        if released.refused {
            return Ok(released);
        }
        let mut by_queue: BTreeMap<String, QueueReleased> = BTreeMap::new();
        for id in self.parked_limits(interrupt)? {
            self.unpark(&id, &mut by_queue, &mut released.dead, interrupt)?;
        }
        released.outage_left_ms = self.outage_left(interrupt)?;
        if released.outage_left_ms.is_none() {
            let registered: BTreeSet<String> = released
                .live
                .iter()
                .chain(&dead)
                .map(|c| c.uuid.clone())
                .collect();
            let busy = self.on_runtime(interrupt, |redis| async move {
                busy_lists(&mut redis.conn().await?).await
            })?;
            let mut reaps: Vec<(String, Reap)> =
                dead.into_iter().map(|c| (c.uuid, Reap::Dead)).collect();
            for uuid in self.unregistered(&registered, interrupt)? {
                reaps.push((uuid, Reap::Unregistered { grace: 0 }));
            }
            for (uuid, why) in reaps {
                let reaped = self.reap(&uuid, why, &busy, max_recoveries, interrupt)?;
                let Some(reaped) = reaped else { continue };
                released.capsules += 1;
                released.dead.extend(reaped.dead);
                for (queue, n) in reaped.requeued_by_queue {
                    entry(&mut by_queue, &queue).recovered += n.unsigned_abs();
                }
            }
        }
        released.queues = by_queue.into_values().collect();
        Ok(released)
    }

    /// Runs `work` with this handle's connection, as one bounded step.
    fn on_runtime<T, F, W>(&self, interrupt: &Interrupt, work: W) -> Result<T>
    where
        T: Send + 'static,
        F: std::future::Future<Output = Result<T>> + Send + 'static,
        W: FnOnce(std::sync::Arc<Redis>) -> F,
    {
        wait_for(interrupt, self.timeout(), work(self.redis().clone()))
    }

    /// Every key matching `pattern`, a `SCAN` step at a time.
    fn scan(&self, pattern: &str, interrupt: &Interrupt) -> Result<Vec<String>> {
        scan::walk(|cursor| {
            let pattern = pattern.to_owned();
            self.on_runtime(interrupt, |redis| async move {
                scan::step(&mut redis.conn().await?, &pattern, cursor).await
            })
        })
    }

    /// The ids of every job limit with a parked list, or noted as having
    /// parked jobs (in `keys::LIMITS_WITH_PARKED` or `keys::RATE_PARKED`), each once.
    fn parked_limits(&self, interrupt: &Interrupt) -> Result<BTreeSet<String>> {
        let pattern = keys::parked("*");
        let (prefix, suffix) = keys_around(&pattern);
        let mut ids: BTreeSet<String> = self
            .scan(&pattern, interrupt)?
            .iter()
            .filter_map(|key| key.strip_prefix(prefix)?.strip_suffix(suffix))
            .map(str::to_owned)
            .collect();
        ids.extend(scan::walk(|cursor| {
            self.on_runtime(interrupt, |redis| async move {
                Ok(redis::cmd("SSCAN")
                    .arg(keys::LIMITS_WITH_PARKED)
                    .arg(cursor)
                    .arg("COUNT")
                    .arg(scan::COUNT)
                    .query_async(&mut redis.conn().await?)
                    .await?)
            })
        })?);
        let rate_parked: Vec<String> = self.on_runtime(interrupt, |redis| async move {
            Ok(redis::cmd("ZRANGE")
                .arg(keys::RATE_PARKED)
                .arg(0)
                .arg(-1)
                .query_async(&mut redis.conn().await?)
                .await?)
        })?;
        ids.extend(rate_parked);
        Ok(ids)
    }

    /// Moves all of job limit `id`'s parked jobs, a batch a step.
    fn unpark(
        &self,
        id: &str,
        by_queue: &mut BTreeMap<String, QueueReleased>,
        dead: &mut Vec<JobRef>,
        interrupt: &Interrupt,
    ) -> Result<()> {
        loop {
            let args = [id.to_owned(), BATCH.to_string()];
            type Reply = (u64, Vec<(String, u64)>, Vec<(String, String)>);
            let (left, queues, unqueued): Reply =
                self.on_runtime(interrupt, |redis| async move {
                    let mut conn = redis.writer().await?;
                    UNPARK_SCRIPT
                        .invoke(&mut conn, &[] as &[&str], &args[..])
                        .await
                })?;
            for (queue, n) in queues {
                entry(by_queue, &queue).parked += n;
            }
            dead.extend(
                unqueued
                    .into_iter()
                    .map(|(jid, class)| (String::new(), jid, class)),
            );
            if left == 0 {
                return Ok(());
            }
        }
    }

    /// Milliseconds the outage key has left, if it stands.
    fn outage_left(&self, interrupt: &Interrupt) -> Result<Option<u64>> {
        let pttl: i64 = self.on_runtime(interrupt, |redis| async move {
            Ok(redis::cmd("PTTL")
                .arg(keys::OUTAGE)
                .query_async(&mut redis.conn().await?)
                .await?)
        })?;
        // -2: absent; -1: set without a TTL (by hand), which stands.
        Ok((pttl != -2).then(|| pttl.max(0).unsigned_abs()))
    }

    /// Capsules with in-progress lists (their queues set) that are neither
    /// in `registered` nor beating: what the reaper meets only through
    /// busy lists, after a grace (orphans.lua).
    fn unregistered(
        &self,
        registered: &BTreeSet<String>,
        interrupt: &Interrupt,
    ) -> Result<Vec<String>> {
        let pattern = keys::capsule_queues("*");
        let (prefix, suffix) = keys_around(&pattern);
        let uuids: Vec<String> = self
            .scan(&pattern, interrupt)?
            .iter()
            .filter_map(|key| key.strip_prefix(prefix)?.strip_suffix(suffix))
            .filter(|uuid| !registered.contains(*uuid))
            .map(str::to_owned)
            .collect();
        if uuids.is_empty() {
            return Ok(uuids);
        }
        let checked = uuids.clone();
        let beating: Vec<bool> = self.on_runtime(interrupt, |redis| async move {
            let mut pipe = redis::pipe();
            for uuid in &checked {
                pipe.cmd("EXISTS").arg(keys::heartbeat(uuid));
            }
            Ok(pipe.query_async(&mut redis.conn().await?).await?)
        })?;
        Ok(uuids
            .into_iter()
            .zip(beating)
            .filter(|(_, b)| !b)
            .map(|(u, _)| u)
            .collect())
    }

    /// Reaps one capsule as the reaper does (reap.lua checks again, in the
    /// same step, that it is not alive). An unregistered one is noted first
    /// as found so long ago that no grace is left: reap.lua's mode for
    /// those takes the note as its proof.
    fn reap(
        &self,
        uuid: &str,
        why: Reap,
        busy: &[String],
        max_recoveries: u32,
        interrupt: &Interrupt,
    ) -> Result<Option<crate::Reaped>> {
        let (uuid, busy) = (uuid.to_owned(), busy.to_vec());
        self.on_runtime(interrupt, |redis| async move {
            let mut conn = redis.writer().await?;
            if matches!(why, Reap::Unregistered { .. }) {
                redis::cmd("HSET")
                    .arg(keys::UNREGISTERED)
                    .arg(&uuid)
                    .arg(0)
                    .query_async::<()>(&mut *conn)
                    .await?;
            }
            let reaper = Reaper::new(max_recoveries);
            let reaped = reaper
                .reap_one(&mut conn, &uuid, busy.into_iter(), why)
                .await?;
            if reaped.is_none() && matches!(why, Reap::Unregistered { .. }) {
                // Not reaped (the outage key came, or it came back): the
                // note must not stand for a grace that never passed.
                redis::cmd("HDEL")
                    .arg(keys::UNREGISTERED)
                    .arg(&uuid)
                    .query_async::<()>(&mut *conn)
                    .await?;
            }
            Ok(reaped)
        })
    }
}

/// What a key pattern built with `*` for its variable part has before and
/// after it.
fn keys_around(pattern: &str) -> (&str, &str) {
    pattern.split_once('*').unwrap_or((pattern, ""))
}

fn entry<'a>(
    by_queue: &'a mut BTreeMap<String, QueueReleased>,
    queue: &str,
) -> &'a mut QueueReleased {
    by_queue
        .entry(queue.to_owned())
        .or_insert_with(|| QueueReleased {
            queue: queue.to_owned(),
            ..QueueReleased::default()
        })
}
