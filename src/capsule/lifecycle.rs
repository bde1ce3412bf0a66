//! A capsule's life in Redis: registering and proving itself alive, healing
//! its busy and in-progress lists, reaping dead capsules, deregistering.

use crate::admin::{job_limits, write_defaults, INFO_TTL_SECS};
use crate::connection::Conn;
use crate::keys;
use crate::reaper::{Reap, Reaped};
use crate::runtime::run_plain;
use crate::{Interrupt, Result};

use std::sync::atomic::Ordering;
use std::sync::Weak;
use std::time::{Duration, Instant};

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
    /// The capsule's heartbeat key was gone before its period was up: it
    /// could not beat for longer than its expiry (Redis down or unreachable,
    /// this process frozen), or Redis lost its data. The beat registered the
    /// capsule again and wrote the configured limits where none are set.
    pub restored: bool,
    /// Configured limits were missing, and written again: Redis had lost
    /// its data (a restart without persistence).
    pub lost_data: bool,
    /// Jobs this capsule still runs that Redis no longer counted, booked
    /// again until they end. It had been reaped as dead while alive (frozen
    /// for longer than its heartbeat's expiry), or Redis lost the write of
    /// their fetch (a failover): these jobs may run a second time elsewhere,
    /// unless nobody had taken them yet ([`Rebooked::withdrawn`]).
    pub rebooked: Vec<Rebooked>,
    /// Jobs this capsule had finished that were still in its in-progress
    /// lists (Redis had lost their acknowledgement: a failover, or a restart
    /// that lost its last writes), removed rather than run again: (queue, jid).
    pub finished: Vec<(String, String)>,
    /// No capsule was reaped: an outage or a freeze ended less than a
    /// heartbeat's expiry ago (see [`keys::OUTAGE`]), and a capsule silent
    /// through it may be alive.
    pub held_off: bool,
    /// Parked jobs sent back to their queues because their limit had room
    /// no release had used (see release.lua).
    pub released: u64,
}

/// A job a capsule still runs, booked again (see [`BeatReport::rebooked`]).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Rebooked {
    pub queue: String,
    pub jid: String,
    /// It was still in its queue (or parked), taken by nobody: taken out, it
    /// runs once.
    pub withdrawn: bool,
}

/// Whether this capsule's beats went on without a break: a break (a beat
/// that failed, or one that came later than a heartbeat's expiry after the
/// last) means other capsules may have been unable to beat too, for the
/// same reason (Redis down, restarting or unreachable; the machine frozen).
#[derive(Debug, Default)]
pub(super) struct Continuity {
    failed: bool,
    last_ok: Option<Instant>,
}

impl Continuity {
    fn broken(&self, now: Instant, expiry: Duration) -> bool {
        self.failed
            || self
                .last_ok
                .is_some_and(|at| now.duration_since(at) > expiry)
    }
}

/// What a registration found.
struct Registered {
    /// The heartbeat key was gone.
    restored: bool,
    /// Configured limits were missing (and written again).
    lost_data: bool,
    /// The outage key exists: no reaping.
    held_off: bool,
}

impl Capsule {
    /// Proves this capsule alive, heals its busy and in-progress lists,
    /// reaps capsules whose heartbeat expired, on every queue, and those
    /// that hold slots in the queues it serves (see [`Capsule::serve`])
    /// while neither registered nor beating for [`Capsule::grace`] seconds.
    ///
    /// After a break in its own beats (see `Continuity`), it first sends
    /// its pending acknowledgements, sets [`keys::OUTAGE`] so that nobody
    /// reaps for a heartbeat's expiry, and tells the reconciliation the jobs
    /// it finished lately, whose acknowledgement Redis may have lost.
    pub fn beat(&self, interrupt: &Interrupt) -> Result<BeatReport> {
        let inner = self.inner.clone();
        let expiry = Duration::from_secs(inner.heartbeat_ttl);
        let broken = inner.continuity.lock().broken(Instant::now(), expiry);
        let report = run_plain(interrupt, self.inner.timeout * 4, async move {
            // Jobs pushed back and slots freed: a waiter may take them (the
            // writer tells the doorbell when the beat is over).
            if broken {
                inner.flush().await?;
            }
            let mut conn = inner.redis.writer().await?;
            let started = Instant::now();
            let mut registered = inner.register(&mut conn, broken).await?;
            // A registration that waited longer than a period (a Redis
            // stopped, then resumed) is a break too.
            if !broken && started.elapsed() > inner.period {
                inner.hold_off_reaping(&mut conn).await?;
                registered.held_off = true;
            }
            let healed = inner.reconcile(&mut conn, broken).await?;
            let mut reaped = Vec::new();
            if !registered.held_off {
                reaped = inner.reaper.reap_dead(&mut conn, &inner.uuid).await?;
                let served = inner.served.lock().clone();
                if !served.is_empty() {
                    let grace = inner.grace();
                    let unregistered =
                        inner
                            .reaper
                            .reap_unregistered(&mut conn, &inner.uuid, &served, grace);
                    reaped.extend(unregistered.await?);
                }
            }
            let cursor = *inner.sweep.lock();
            let (cursor, released) = job_limits::sweep(&mut conn, cursor).await?;
            *inner.sweep.lock() = cursor;
            Ok(BeatReport {
                reaped,
                corrected: healed.corrected,
                orphans: healed.orphans,
                restored: registered.restored,
                lost_data: registered.lost_data,
                rebooked: healed.rebooked,
                finished: healed.finished,
                held_off: registered.held_off,
                released,
            })
        });
        let mut continuity = self.inner.continuity.lock();
        continuity.failed = report.is_err();
        if report.is_ok() {
            continuity.last_ok = Some(Instant::now());
        }
        report
    }

    /// Registers this capsule (heartbeat key and membership), as a beat does.
    pub fn register(&self, interrupt: &Interrupt) -> Result<()> {
        let inner = self.inner.clone();
        run_plain(interrupt, self.inner.timeout, async move {
            inner
                .register(&mut inner.redis.conn().await?, false)
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
    /// master: heals the capsule there at once (see [`Inner::heal`]).
    pub(super) fn followed(me: &Weak<Inner>) {
        let (Some(inner), Ok(handle)) = (me.upgrade(), crate::runtime::handle()) else {
            return;
        };
        // Failing, the next look or beat does it.
        handle.spawn(async move { inner.heal().await });
    }

    /// True unless the capsule follows a master through sentinels and is
    /// not healed on the one of `generation` yet.
    pub(super) fn healed_on(&self, generation: u64) -> bool {
        !self.redis.follows_master() || self.healed.load(Ordering::Acquire) >= generation
    }

    /// Behind sentinels, before its first look on a new master: registers
    /// and reconciles the capsule there, as the next beat would, and no look
    /// of the capsule runs there before. What the old master took in after
    /// the new one was promoted is lost with it: a booking (the new
    /// master's busy entries then count fewer jobs than the capsule holds)
    /// is written again now, not a heartbeat period later; a job the
    /// capsule runs whose fetch was lost is taken out of its queue and
    /// booked again; a finished job whose acknowledgement was lost is
    /// removed from its in-progress list, and one whose fetch was lost too
    /// from the front of its queue, rather than run again. Pending
    /// acknowledgements go first.
    pub(super) async fn heal(&self) -> Result<()> {
        let generation = self.redis.generation();
        if self.healed_on(generation) {
            return Ok(());
        }
        let _one = self.healing.lock().await;
        if self.healed_on(generation) {
            return Ok(());
        }
        self.flush().await?;
        let mut conn = self.redis.writer().await?;
        self.register(&mut conn, false).await?;
        self.reconcile(&mut conn, true).await?;
        self.healed.store(generation, Ordering::Release);
        Ok(())
    }

    /// Sets the heartbeat and membership, and after a break in the beats
    /// (`broken`) the outage key. If the heartbeat key was gone, writes the
    /// configured limits again where unset.
    /// The heartbeat holds what v5's reaper takes for alive (`"1"`), so
    /// that its processes, sharing the Redis during a migration, leave this
    /// capsule be. Registering also ends a note that the capsule was found
    /// unregistered (see src/lua/orphans.lua): it is alive.
    async fn register(&self, conn: &mut Conn, broken: bool) -> Result<Registered> {
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
        if broken {
            outage(&mut pipe, &self.uuid, self.heartbeat_ttl);
        }
        pipe.cmd("EXISTS").arg(keys::OUTAGE);
        if let Some(info) = self.info.lock().as_deref() {
            pipe.cmd("SET")
                .arg(keys::capsule_info(&self.uuid))
                .arg(info)
                .arg("EX")
                .arg(self.heartbeat_ttl + INFO_TTL_SECS)
                .ignore();
        }
        let (existed, held_off): (bool, bool) = pipe.query_async(conn).await?;
        let mut lost_data = false;
        if !existed {
            let defaults = self.defaults.lock().clone();
            lost_data = write_defaults(conn, &defaults).await? > 0;
        }
        Ok(Registered {
            restored: !existed,
            lost_data,
            held_off,
        })
    }

    /// Sets the outage key: nobody reaps for a heartbeat's expiry.
    async fn hold_off_reaping(&self, conn: &mut Conn) -> Result<()> {
        let mut pipe = redis::pipe();
        outage(&mut pipe, &self.uuid, self.heartbeat_ttl);
        pipe.query_async::<()>(conn).await?;
        Ok(())
    }

    /// Pushes back in-progress jobs this capsule does not hold, books again
    /// those it holds that Redis no longer has, and sets its busy entries per
    /// queue and job limit to the jobs it holds; with `finished`, removes
    /// rather than pushes back the jobs it finished lately. Exact: no script
    /// that changes them runs between reading the ledger and this one.
    async fn reconcile(&self, conn: &mut Conn, finished: bool) -> Result<Healed> {
        let _exclusive = self.gate.write().await;
        let mut args = vec![self.uuid.clone().into_bytes()];
        args.extend(self.ledger().reconcile_args(finished));
        type Reply = (
            Vec<(String, i64, i64)>,
            Vec<(String, String)>,
            Vec<(String, String, i64)>,
            Vec<(String, String)>,
        );
        let (corrected, orphans, rebooked, finished): Reply =
            self.reconcile.invoke(conn, &[] as &[&str], &args).await?;
        let rebooked = rebooked
            .into_iter()
            .map(|(queue, jid, withdrawn)| Rebooked {
                queue,
                jid,
                withdrawn: withdrawn > 0,
            })
            .collect();
        Ok(Healed {
            corrected,
            orphans,
            rebooked,
            finished,
        })
    }
}

/// What a reconciliation changed (see [`BeatReport`]).
pub(super) struct Healed {
    corrected: Vec<(String, i64, i64)>,
    orphans: Vec<(String, String)>,
    rebooked: Vec<Rebooked>,
    finished: Vec<(String, String)>,
}

/// `SET` of the outage key for a heartbeat's expiry (`ttl` seconds).
fn outage(pipe: &mut redis::Pipeline, uuid: &str, ttl: u64) {
    pipe.cmd("SET")
        .arg(keys::OUTAGE)
        .arg(uuid)
        .arg("EX")
        .arg(ttl)
        .ignore();
}
