//! A hand-over's pipeline, as the module's diagram shows it, and its
//! [`Layout`]: where each reply the verdict reads is, recorded as each
//! command is added, so that the pipeline and its reading cannot drift
//! apart.

use std::ops::Range;

use crate::carried::CarriedLimit;
use crate::keys;
use crate::ledger::Ack;

/// The commands a hand-over sends besides those every one sends, as it was
/// decided.
pub(super) struct Sends {
    /// The next job comes from the parked jobs of the one job limit.
    pub(super) from_parked_list: bool,
    /// The queue's busy list is counted (it had a limit lately).
    pub(super) count_busy: bool,
    /// The acknowledgement's `HDEL` is sent (recoveries may be counted),
    /// and the `EXISTS` of recoveries after it.
    pub(super) recoveries_counted: bool,
    /// Fetchers sleep on the doorbell: the `LLEN` of the queue says whether
    /// more is eligible.
    pub(super) report: bool,
    /// The acknowledgement's `LREM` waits for a keyed hand-over's second
    /// round trip (keyed.rs), which frees its job's slots with it.
    pub(super) defer_ack: bool,
    /// A grant of a rated limit's starts (lease.rs), sent before the
    /// `LMOVE`.
    pub(super) grant: Option<redis::Cmd>,
    /// The rated limit whose count of jobs sent back for its rate the
    /// `MGET` reads last (lease.rs).
    pub(super) released: Option<String>,
    /// The one limit is a bare rate (lease.rs's `bare`): its busy and
    /// parked lists are not read.
    pub(super) bare_rate: bool,
}

/// Where each read reply is in the pipeline's replies (one a command, in
/// the order sent). The `SADD`'s and the `HDEL`'s are not read.
pub(super) struct Layout {
    /// How many replies the pipeline gets.
    pub(super) replies: usize,
    /// The `LREM`'s: 1 if the acknowledged job was there, and its slot
    /// passes (none when deferred).
    pub(super) acked: Option<usize>,
    /// The lease's grant (before the `LMOVE`), when asked.
    pub(super) grant: Option<usize>,
    /// The `LMOVE`'s: the next job.
    pub(super) moved: usize,
    /// The `MGET`'s: the queue's state, whether classes back off in it, then
    /// each job limit's stored value and back-off, then a rated limit's
    /// count of jobs sent back, and with a deferred acknowledgement, the
    /// capsule's heartbeat.
    pub(super) state: usize,
    /// The `LLEN` of the queue's busy list, when counted.
    pub(super) busy: Option<usize>,
    /// The `LLEN`s of the job limits' busy lists, in their order (empty
    /// without job limits).
    pub(super) job_busy: Range<usize>,
    /// The `EXISTS` of the job limits' parked lists, with job limits, from
    /// the queue.
    pub(super) parked_lists: Option<usize>,
    /// The `LLEN` of the queue, while fetchers sleep.
    pub(super) queued: Option<usize>,
    /// The `EXISTS` of recoveries, with the `HDEL`.
    pub(super) recoveries: Option<usize>,
}

/// Hands out replies' indices in the order commands are added.
struct Next(usize);

impl Next {
    fn one(&mut self) -> usize {
        self.many(1).start
    }

    fn many(&mut self, n: usize) -> Range<usize> {
        let start = self.0;
        self.0 += n;
        start..self.0
    }
}

/// The pipeline of a hand-over from `queue` that acknowledges `ack` and
/// passes the slots of `limits` (its job limits, if any) too, encoded; and
/// its layout.
pub(super) fn build(
    queue: &str,
    uuid: &str,
    ack: &Ack,
    limits: &[CarriedLimit],
    sends: &Sends,
) -> (Vec<u8>, Layout) {
    let in_progress = keys::in_progress(uuid, queue);
    let mut pipe = redis::pipe();
    let mut next = Next(0);
    if sends.defer_ack {
        // Before the heartbeat's read (the MGET's last): the second round
        // trip, a transaction, runs only if nothing wrote or expired it
        // since, a reaper included (keyed.rs).
        pipe.cmd("WATCH").arg(keys::heartbeat(uuid));
        next.one();
    }
    if !limits.is_empty() {
        // First: until the script decides a next job that does not carry
        // them, no job in the capsule's in-progress lists may say whose the
        // passed slots are (see reap.lua). From parked jobs too, each of
        // which carries the limit: the list may be empty by the move.
        let named = pipe.cmd("SADD").arg(keys::capsule_limits(uuid));
        for limit in limits {
            named.arg(&limit.id);
        }
        next.one();
    }
    let acked = (!sends.defer_ack).then(|| {
        pipe.cmd("LREM").arg(&in_progress).arg(1).arg(&ack.job);
        next.one()
    });
    if sends.recoveries_counted {
        pipe.cmd("HDEL").arg(keys::RECOVERIES).arg(ack.digest.hex());
        next.one();
    }
    // Before the move: granted before the job starts (lua/lease.lua).
    let grant = sends.grant.as_ref().map(|call| {
        pipe.add_command(call.clone());
        next.one()
    });
    let source = match limits.first() {
        Some(limit) if sends.from_parked_list => keys::parked(&limit.id),
        _ => keys::queue(queue),
    };
    pipe.cmd("LMOVE")
        .arg(source)
        .arg(&in_progress)
        .arg("RIGHT")
        .arg("LEFT");
    let moved = next.one();
    let state = pipe
        .cmd("MGET")
        .arg(keys::limit(queue))
        .arg(keys::process_limit(queue))
        .arg(keys::paused(queue))
        .arg(keys::rate(queue))
        .arg(keys::RATE_DUE)
        .arg(keys::RECOVERED)
        .arg(keys::class_back_off(queue))
        .arg(keys::job_limit(&keys::fair_queue_id(queue)));
    for limit in limits {
        state
            .arg(keys::job_limit(&limit.id))
            .arg(keys::job_back_off(&limit.id));
    }
    if let Some(id) = &sends.released {
        state.arg(keys::job_released(id));
    }
    if sends.defer_ack {
        // Last: the second round trip frees slots only while it exists.
        state.arg(keys::heartbeat(uuid));
    }
    let state = next.one();
    let busy = sends.count_busy.then(|| {
        pipe.cmd("LLEN").arg(keys::busy(queue));
        next.one()
    });
    let counted = if sends.bare_rate { &[][..] } else { limits };
    for limit in counted {
        pipe.cmd("LLEN").arg(keys::job_busy(&limit.id));
    }
    let job_busy = next.many(counted.len());
    // From a parked list, its `LMOVE` says when it is empty.
    let look_parked = !sends.from_parked_list && !sends.bare_rate;
    let parked_lists = (!limits.is_empty() && look_parked).then(|| {
        let exists = pipe.cmd("EXISTS");
        for limit in limits {
            exists.arg(keys::parked(&limit.id));
        }
        next.one()
    });
    let queued = sends.report.then(|| {
        pipe.cmd("LLEN").arg(keys::queue(queue));
        next.one()
    });
    let recoveries = sends.recoveries_counted.then(|| {
        pipe.cmd("EXISTS").arg(keys::RECOVERIES);
        next.one()
    });
    let layout = Layout {
        replies: next.0,
        acked,
        grant,
        moved,
        state,
        busy,
        job_busy,
        parked_lists,
        queued,
        recoveries,
    };
    (pipe.get_packed_pipeline(), layout)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::Digest;

    use super::super::values::command_names as names;

    /// Every index the layout records is its command's, whatever the
    /// decision sent.
    #[test]
    fn the_layout_points_at_its_commands() {
        let job = b"{\"class\":\"J\"}".to_vec();
        let ack = Ack {
            queue: "q".into(),
            digest: Digest::of(&job),
            job,
            thread: std::thread::current().id(),
            at: std::time::Instant::now(),
        };
        let limits: Vec<CarriedLimit> = (0..2)
            .map(|i| CarriedLimit {
                id: format!("class:C{i}"),
                concurrency: 2,
                rate: None,
            })
            .collect();
        for bits in 0..64u8 {
            for n in 0..=limits.len() {
                let sends = Sends {
                    from_parked_list: bits & 1 != 0,
                    count_busy: bits & 2 != 0,
                    recoveries_counted: bits & 4 != 0,
                    report: bits & 8 != 0,
                    defer_ack: bits & 16 != 0,
                    grant: (bits & 32 != 0).then(|| redis::cmd("FCALL")),
                    released: (bits & 32 != 0).then(|| "class:C0".into()),
                    bare_rate: bits & 32 != 0 && n == 1,
                };
                let (packed, at) = build("q", "u", &ack, &limits[..n], &sends);
                let sent = names(&packed);
                assert_eq!(sent.len(), at.replies, "{sent:?}");
                let named = |i: Option<usize>| i.map(|i| sent[i].as_str());
                let first = match (n > 0, sends.defer_ack) {
                    (_, true) => "WATCH",
                    (true, false) => "SADD",
                    (false, false) => "LREM",
                };
                assert_eq!(sent[0], first);
                assert_eq!(named(at.acked), (!sends.defer_ack).then_some("LREM"));
                assert_eq!(sent[at.moved], "LMOVE");
                let grant = sends.grant.is_some().then_some("FCALL");
                assert_eq!(named(at.grant), grant);
                assert!(at.grant.map_or(true, |i| i < at.moved));
                assert_eq!(sent[at.state], "MGET");
                assert_eq!(named(at.busy), sends.count_busy.then_some("LLEN"));
                let counted = if sends.bare_rate { 0 } else { n };
                assert_eq!(at.job_busy.len(), counted);
                assert!(sent[at.job_busy.clone()].iter().all(|c| c == "LLEN"));
                let exists = n > 0 && !sends.from_parked_list && !sends.bare_rate;
                assert_eq!(named(at.parked_lists), exists.then_some("EXISTS"));
                assert_eq!(named(at.queued), sends.report.then_some("LLEN"));
                assert_eq!(
                    named(at.recoveries),
                    sends.recoveries_counted.then_some("EXISTS")
                );
                let hdel = sent.iter().filter(|c| *c == "HDEL").count();
                assert_eq!(hdel, usize::from(sends.recoveries_counted));
            }
        }
    }
}
