//! Proving a capsule alive, once a heartbeat period: each beat registers
//! it, heals its lists (heal.rs), reaps dead capsules and sweeps parked
//! jobs' limits, and reports what it did.

use std::time::{Duration, Instant};

use crate::admin::job_limits;
use crate::reaper::Reaped;
use crate::runtime::wait_for;
use crate::{Interrupt, Result};

use super::continuity::Stretch;
use super::heal::Rebooked;
use super::Capsule;

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
    /// heartbeat's expiry ago (see [`keys::OUTAGE`](crate::keys::OUTAGE)),
    /// and a capsule silent through it may be alive.
    pub held_off: bool,
    /// Parked jobs sent back to their queues because their limit had room
    /// no release had used (see release.lua).
    pub released: u64,
    /// The data format this beat's census put in force, if it changed it
    /// (see src/format.rs): 2 once every live capsule speaks it, 1 when one
    /// that does not (an older release's, v5's) is live again.
    pub format_switched: Option<u8>,
}

impl Capsule {
    /// Proves this capsule alive, heals its busy and in-progress lists,
    /// reaps capsules whose heartbeat expired, on every queue (found by
    /// their entry in [`keys::BEATS`](crate::keys::BEATS), and once a
    /// period across the fleet by the census, [`keys::CENSUS`](crate::keys::CENSUS),
    /// which also decides the data format: see src/format.rs),
    /// and those that hold slots in the queues it serves (see
    /// [`Capsule::serve`]) while neither registered nor beating for
    /// [`Capsule::grace`] seconds.
    ///
    /// After a break in its own beats (see `Continuity`), it first sends
    /// its pending acknowledgements, sets [`keys::OUTAGE`](crate::keys::OUTAGE)
    /// so that nobody reaps for a heartbeat's expiry, and tells the
    /// reconciliation the jobs it finished lately, whose acknowledgement
    /// Redis may have lost. It reaps only as a witness (see `Stretch::witness`).
    pub fn beat(&self, interrupt: &Interrupt) -> Result<BeatReport> {
        let inner = self.inner.clone();
        let expiry = Duration::from_secs(inner.heartbeat_ttl);
        let (broken, stretch) = {
            let continuity = inner.continuity.lock();
            let now = Instant::now();
            (
                continuity.broken(now, expiry),
                continuity.current(now, expiry),
            )
        };
        let beat = wait_for(interrupt, self.inner.timeout * 4, async move {
            // Jobs pushed back and slots freed: a waiter may take them (the
            // writer tells the doorbell when the beat is over).
            if broken {
                inner.flush().await?;
            }
            let mut conn = inner.redis.writer().await?;
            let started = Instant::now();
            let witness = stretch.is_some_and(|stretch| stretch.witness(expiry));
            let mut registered = inner.register(&mut conn, broken, witness).await?;
            // A registration that waited longer than a period (a Redis
            // stopped, then resumed) is a break too.
            if !broken && started.elapsed() > inner.period {
                inner.hold_off_reaping(&mut conn).await?;
                registered.held_off = true;
            }
            let stretch = stretch.unwrap_or(Stretch {
                since: started,
                vouched: registered.vouched,
            });
            let held_off = registered.held_off || !stretch.witness(expiry);
            let healed = inner.reconcile(&mut conn, broken).await?;
            let mut reaped = Vec::new();
            let mut format_switched = None;
            if !held_off {
                let reaping = inner
                    .reaper
                    .reap_dead(&mut conn, &inner.uuid, registered.now_ms, inner.period)
                    .await?;
                reaped = reaping.reaped;
                format_switched = reaping.switched;
                if reaping.census.is_some() {
                    let cursor = *inner.strays.lock();
                    let strays = inner
                        .reaper
                        .sweep_stray_queues(&mut conn, &inner.uuid, cursor);
                    *inner.strays.lock() = strays.await?;
                }
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
            let report = BeatReport {
                reaped,
                corrected: healed.corrected,
                orphans: healed.orphans,
                restored: registered.restored,
                lost_data: registered.lost_data,
                rebooked: healed.rebooked,
                finished: healed.finished,
                held_off,
                released,
                format_switched,
            };
            Ok((report, stretch))
        });
        let mut continuity = self.inner.continuity.lock();
        continuity.record(beat.as_ref().ok().map(|(_, stretch)| *stretch));
        beat.map(|(report, _)| report)
    }
}
