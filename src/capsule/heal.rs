//! Healing: a capsule's busy and in-progress lists reconciled with what
//! its ledger holds, at each beat, and at once on a new master behind
//! sentinels, before the capsule's first look there.

use std::sync::atomic::Ordering;
use std::sync::Weak;

use crate::connection::Conn;
use crate::Result;

use super::Inner;

/// A job a capsule still runs, booked again (see
/// [`BeatReport::rebooked`](super::BeatReport::rebooked)).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Rebooked {
    pub queue: String,
    pub jid: String,
    /// It was still in its queue (or parked), taken by nobody: taken out, it
    /// runs once.
    pub withdrawn: bool,
}

impl Inner {
    /// Behind sentinels, the capsule's connection was opened to a new
    /// master: heals the capsule there at once (see [`Inner::heal`]).
    pub(super) fn followed(me: &Weak<Inner>) {
        let (Some(inner), Ok(handle)) = (me.upgrade(), crate::runtime::handle()) else {
            return;
        };
        // Failing, the next look or beat does it.
        crate::runtime::detach(&handle, async move {
            let _ = inner.heal().await;
        });
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
        self.register(&mut conn, false, false).await?;
        self.reconcile(&mut conn, true).await?;
        self.healed.store(generation, Ordering::Release);
        Ok(())
    }

    /// Pushes back in-progress jobs this capsule does not hold, books again
    /// those it holds that Redis no longer has, and sets its busy entries per
    /// queue and job limit to the jobs it holds; with `finished`, removes
    /// rather than pushes back the jobs it finished lately. Exact: no script
    /// that changes them runs between reading the ledger and this one.
    pub(super) async fn reconcile(&self, conn: &mut Conn, finished: bool) -> Result<Healed> {
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

/// What a reconciliation changed (see [`BeatReport`](super::BeatReport)).
pub(super) struct Healed {
    pub(super) corrected: Vec<(String, i64, i64)>,
    pub(super) orphans: Vec<(String, String)>,
    pub(super) rebooked: Vec<Rebooked>,
    pub(super) finished: Vec<(String, String)>,
}
