//! A capsule's life in Redis: registering and proving itself alive, healing
//! its busy and in-progress lists, reaping dead capsules, deregistering.

use crate::admin::write_defaults;
use crate::capsules::INFO_TTL_SECS;
use crate::connection::Conn;
use crate::reaper::{Reap, Reaped};
use crate::runtime::run_plain;
use crate::{job_limits, keys};
use crate::{Interrupt, Result};

use std::sync::Weak;

use super::{Capsule, Inner};

/// What a heartbeat did besides proving this capsule alive.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct BeatReport {
    /// Capsules reaped: registered ones whose heartbeat expired, and those
    /// found holding slots in the queues this capsule serves while neither
    /// registered nor beating for the grace period ([`Reaped::unregistered`]).
    pub reaped: Vec<Reaped>,
    /// This capsule's busy lists it corrected: (busy key, entries before, after).
    pub corrected: Vec<(String, i64, i64)>,
    /// Jobs in this capsule's in-progress lists that it does not hold (the
    /// reply of their fetch was lost), pushed back: (queue, jid).
    pub orphans: Vec<(String, String)>,
    /// The capsule's heartbeat key was gone before its period was up: Redis
    /// lost its data (or reaped a frozen process). The beat registered the
    /// capsule again and wrote the configured limits where none are set.
    pub restored: bool,
    /// Parked jobs sent back to their queues because their limit had room
    /// no release had used (see release.lua).
    pub released: u64,
}

impl Capsule {
    /// Proves this capsule alive, heals its busy and in-progress lists,
    /// reaps capsules whose heartbeat expired, on every queue, and those
    /// that hold slots in the queues it serves (see [`Capsule::serve`])
    /// while neither registered nor beating for [`Capsule::grace`] seconds.
    pub fn beat(&self, interrupt: &Interrupt) -> Result<BeatReport> {
        let inner = self.inner.clone();
        run_plain(interrupt, self.inner.timeout * 4, async move {
            // Jobs pushed back and slots freed: a waiter may take them (the
            // writer tells the doorbell when the beat is over).
            let mut conn = inner.redis.writer().await?;
            let restored = inner.register(&mut conn).await?;
            let (corrected, orphans) = inner.reconcile(&mut conn).await?;
            let mut reaped = inner.reaper.reap_dead(&mut conn, &inner.uuid).await?;
            let served = inner.served.lock().clone();
            if !served.is_empty() {
                let grace = inner.grace();
                let unregistered =
                    inner
                        .reaper
                        .reap_unregistered(&mut conn, &inner.uuid, &served, grace);
                reaped.extend(unregistered.await?);
            }
            let cursor = *inner.sweep.lock();
            let (cursor, released) = job_limits::sweep(&mut conn, cursor).await?;
            *inner.sweep.lock() = cursor;
            Ok(BeatReport {
                reaped,
                corrected,
                orphans,
                restored,
                released,
            })
        })
    }

    /// Registers this capsule (heartbeat key and membership), as a beat does.
    pub fn register(&self, interrupt: &Interrupt) -> Result<()> {
        let inner = self.inner.clone();
        run_plain(interrupt, self.inner.timeout, async move {
            inner
                .register(&mut inner.redis.conn().await?)
                .await
                .map(|_| ())
        })
    }

    /// Removes this capsule after sending its pending acknowledgements: its
    /// heartbeat, its membership, every slot it still holds in `queues` or in
    /// any queue it fetched from, and its in-progress lists, whose jobs go
    /// back to their queues. Returns the number of slots freed.
    pub fn deregister<S: AsRef<str>>(&self, queues: &[S], interrupt: &Interrupt) -> Result<i64> {
        let inner = self.inner.clone();
        let names: Vec<String> = queues.iter().map(|q| q.as_ref().to_owned()).collect();
        run_plain(interrupt, self.inner.timeout * 4, async move {
            inner.flush().await?;
            let _exclusive = inner.gate.write().await;
            let mut names = names;
            names.extend(inner.ledger().queues().cloned());
            names.sort();
            names.dedup();
            let busy_lists = names.iter().map(|q| keys::busy(q));
            let mut conn = inner.redis.conn().await?;
            let reaped = inner
                .reaper
                .reap_one(&mut conn, &inner.uuid, busy_lists, Reap::Clean)
                .await?;
            Ok(reaped.map_or(0, |r| r.freed))
        })
    }
}

impl Inner {
    /// Behind sentinels, the capsule's connection was opened to a new
    /// master: registers and reconciles there at once, as the next beat
    /// would. What the old master took in after the new one was promoted
    /// is lost with it: a booking (the new master's busy entries then
    /// count fewer jobs than the capsule holds) is written again now, not a
    /// heartbeat period later; a job whose fetch was lost is still in its
    /// queue there, and one whose acknowledgement was lost is pushed back.
    pub(super) fn followed(me: &Weak<Inner>) {
        let (Some(inner), Ok(handle)) = (me.upgrade(), crate::runtime::handle()) else {
            return;
        };
        handle.spawn(async move {
            let healed = async {
                let mut conn = inner.redis.writer().await?;
                inner.register(&mut conn).await?;
                inner.reconcile(&mut conn).await
            };
            // Failing, the next beat does it.
            let _ = healed.await;
        });
    }

    /// Sets the heartbeat and membership; true if the heartbeat key was gone,
    /// in which case the configured limits are written again where unset.
    /// The heartbeat holds what v5's reaper takes for alive (`"1"`), so
    /// that its processes, sharing the Redis during a migration, leave this
    /// capsule be. Registering also ends a note that the capsule was found
    /// unregistered (see src/lua/orphans.lua): it is alive.
    async fn register(&self, conn: &mut Conn) -> Result<bool> {
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("EXISTS")
            .arg(keys::heartbeat(&self.uuid))
            .cmd("SET")
            .arg(keys::heartbeat(&self.uuid))
            .arg(keys::ALIVE)
            .arg("EX")
            .arg(self.heartbeat_ttl)
            .ignore()
            .cmd("SADD")
            .arg(keys::CAPSULES)
            .arg(&self.uuid)
            .ignore()
            .cmd("SADD")
            .arg(keys::REGISTERED)
            .arg(&self.uuid)
            .ignore()
            .cmd("HDEL")
            .arg(keys::UNREGISTERED)
            .arg(&self.uuid)
            .ignore();
        if let Some(info) = self.info.lock().as_deref() {
            pipe.cmd("SET")
                .arg(keys::capsule_info(&self.uuid))
                .arg(info)
                .arg("EX")
                .arg(self.heartbeat_ttl + INFO_TTL_SECS)
                .ignore();
        }
        let (existed,): (bool,) = pipe.query_async(conn).await?;
        if !existed {
            let defaults = self.defaults.lock().clone();
            write_defaults(conn, &defaults).await?;
        }
        Ok(!existed)
    }

    /// Pushes back in-progress jobs this capsule does not hold and sets its
    /// busy entries per queue to the jobs it holds. Exact: no script that
    /// changes them runs between reading the ledger and this one.
    async fn reconcile(
        &self,
        conn: &mut Conn,
    ) -> Result<(Vec<(String, i64, i64)>, Vec<(String, String)>)> {
        let _exclusive = self.gate.write().await;
        let mut args = vec![self.uuid.clone()];
        args.extend(self.ledger().held_args());
        self.reconcile.invoke(conn, &[] as &[&str], &args).await
    }
}
