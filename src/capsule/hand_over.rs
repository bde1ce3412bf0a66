//! The hand-over: a processor that finished a job and fetches again with
//! that job's queue first takes the queue's next job under the finished
//! job's slot, without the fetch script. One pipeline on its own connection:
//!
//! ```text
//! LREM  in-progress 1 <finished job>   the acknowledgement
//! HDEL  recoveries <its digest>        as the script's acknowledgement does
//! LMOVE queue in-progress RIGHT LEFT   the next job, under the same slot
//! MGET  limit process_limit paused     the queue's state, after the move
//! ```
//!
//! and, while fetchers sleep on the doorbell, `LLEN` of the queue and of its
//! busy list: whether another job may be eligible, to wake one (the
//! script's `more`; generous where a process limit would decide).
//!
//! Sidekiq Pro's super_fetch (LMOVE, LREM) and two reads: Redis spends
//! about a third of what the script costs it (bench/results/profile.md).
//!
//! Why no limit is exceeded. A slot passes from one job to the next: neither
//! the queue's count nor the capsule's changes. It passes only while the
//! queue's limits are those under which a fetch script last took a job of
//! that queue on this thread (the script returns them, [`note`]) and the
//! queue is not paused: that job found its count below the limits, and every
//! capsule books a slot only below them, so the count stays within them
//! until they change. The MGET reads them after the move, so a change made
//! before the move shows. Anything else — changed limits, a pause, an empty
//! queue, a finished job no longer in the in-progress list (reaped), a new
//! job carrying job limits, an error reply — is left to the fetch script on
//! the same connection, which decides the moved job as a fetch would
//! (fetch.lua's ARGV[5..7]).

use std::cell::RefCell;

use redis::Value;

use crate::keys;
use crate::ledger::Ack;
use crate::script::fetch::{carries_job_limits, Handed, Look, Mode, QueueLimits};

/// The replies of a hand-over's pipeline: `PLAIN`, or `REPORT` when it
/// reports whether more is eligible.
const PLAIN: usize = 4;
const REPORT: usize = 6;

/// The queue a fetch script last took a job of on this thread, for a
/// capsule, on a master, and that queue's limits then.
struct Verified {
    capsule: u64,
    generation: u64,
    queue: String,
    limits: QueueLimits,
}

thread_local! {
    static VERIFIED: RefCell<Vec<Verified>> = const { RefCell::new(Vec::new()) };
}

/// Records what a fetch script on this thread's connection found: the
/// queue it took a job of and that queue's limits, or nothing.
pub(super) fn note(capsule: u64, generation: u64, look: &Look) {
    VERIFIED.with(|verified| {
        let mut verified = verified.borrow_mut();
        verified.retain(|v| v.capsule != capsule);
        if let (Some(fetched), Some(limits)) = (&look.fetched, &look.limits) {
            verified.push(Verified {
                capsule,
                generation,
                queue: fetched.queue.clone(),
                limits: limits.clone(),
            });
        }
    });
}

/// Forgets what this thread verified for `capsule`.
pub(super) fn forget(capsule: u64) {
    VERIFIED.with(|verified| verified.borrow_mut().retain(|v| v.capsule != capsule));
}

/// A hand-over under way: the queue it takes from and the limits it
/// expects.
pub(super) struct HandOver {
    pub(super) queue: String,
    pub(super) limits: QueueLimits,
    /// Fetchers sleep on the doorbell: say whether more is eligible.
    report: bool,
}

/// What a hand-over's replies say.
pub(super) enum Outcome {
    /// The next job, taken under the finished job's slot, and whether
    /// another may be eligible.
    Taken(Vec<u8>, bool),
    /// For the fetch script to decide.
    Decide(Handed),
}

impl HandOver {
    /// The hand-over a look can be: the one acknowledgement it carries is
    /// of the first queue of this fetch and carries no job limits (whose
    /// slots and parked jobs the script handles), a script on this thread
    /// last took a job of that queue, from this master, and, if fetchers
    /// sleep on the doorbell, that queue is the fetch's only one (whether
    /// another queue has a job for them is the script's to say).
    pub(super) fn of(
        capsule: u64,
        generation: u64,
        mode: Mode,
        acks: &[Ack],
        queues: &[String],
    ) -> Option<HandOver> {
        let report = match mode {
            Mode::Plain => false,
            Mode::Report if queues.len() == 1 => true,
            _ => return None,
        };
        let ([ack], Some(first)) = (acks, queues.first()) else {
            return None;
        };
        if ack.queue != *first || carries_job_limits(&ack.job) {
            return None;
        }
        VERIFIED.with(|verified| {
            verified
                .borrow()
                .iter()
                .find(|v| v.capsule == capsule && v.generation == generation && v.queue == *first)
                .map(|v| HandOver {
                    queue: v.queue.clone(),
                    limits: v.limits.clone(),
                    report,
                })
        })
    }

    /// The pipeline, encoded.
    pub(super) fn request(&self, uuid: &str, ack: &Ack) -> Vec<u8> {
        let name = self.queue.as_str();
        let in_progress = keys::in_progress(uuid, name);
        let mut pipe = redis::pipe();
        pipe.cmd("LREM").arg(&in_progress).arg(1).arg(&ack.job);
        pipe.cmd("HDEL").arg(keys::RECOVERIES).arg(ack.digest.hex());
        pipe.cmd("LMOVE")
            .arg(keys::queue(name))
            .arg(&in_progress)
            .arg("RIGHT")
            .arg("LEFT");
        pipe.cmd("MGET")
            .arg(keys::limit(name))
            .arg(keys::process_limit(name))
            .arg(keys::paused(name));
        if self.report {
            pipe.cmd("LLEN").arg(keys::queue(name));
            pipe.cmd("LLEN").arg(keys::busy(name));
        }
        pipe.get_packed_pipeline()
    }

    /// How many replies its pipeline gets.
    pub(super) fn replies(&self) -> usize {
        if self.report {
            REPORT
        } else {
            PLAIN
        }
    }

    /// The job taken, if the replies (an array of [`HandOver::replies`])
    /// say the slot passed to it, and whether another may be eligible.
    pub(super) fn taken(&self, replies: &Value) -> Option<(Vec<u8>, bool)> {
        let Value::Array(replies) = replies else {
            return None;
        };
        let (Some([Value::Int(1), _, Value::BulkString(job), Value::Array(state)]), rest) = (
            replies
                .get(..PLAIN)
                .and_then(|r| <&[Value; PLAIN]>::try_from(r).ok()),
            replies.get(PLAIN..).unwrap_or_default(),
        ) else {
            return None;
        };
        let unchanged = match state.as_slice() {
            [limit, process_limit, Value::Nil] => {
                bytes(limit) == self.limits.limit.as_deref()
                    && bytes(process_limit) == self.limits.process_limit.as_deref()
            }
            _ => false,
        };
        let more = match rest {
            [Value::Int(queued), Value::Int(busy)] => {
                let busy = u64::try_from(*busy).unwrap_or(0);
                *queued > 0 && limit_value(&self.limits.limit).map_or(true, |limit| busy < limit)
            }
            _ => false,
        };
        (unchanged && !carries_job_limits(job)).then(|| (job.clone(), more))
    }

    /// What the replies say. Replies that do not say the acknowledgement
    /// freed the slot hand in none: a busy entry left over lowers the limit
    /// until the capsule next reconciles, where a slot freed twice would let
    /// one job too many run.
    pub(super) fn outcome(&self, replies: Value) -> Outcome {
        if let Some((job, more)) = self.taken(&replies) {
            return Outcome::Taken(job, more);
        }
        let (slot, job) = match &replies {
            Value::Array(r) if r.len() == self.replies() => (
                matches!(r[0], Value::Int(1)),
                match &r[2] {
                    Value::BulkString(job) => Some(job.clone()),
                    _ => None,
                },
            ),
            _ => (false, None),
        };
        Outcome::Decide(Handed {
            queue: self.queue.clone(),
            slot,
            job,
        })
    }
}

/// A stored limit's value as the scripts read it (limits.rs), if set: a
/// broken one reads as 0.
fn limit_value(raw: &Option<Vec<u8>>) -> Option<u64> {
    let raw = raw.as_deref()?;
    let text = std::str::from_utf8(raw).ok();
    Some(
        text.and_then(|t| crate::limits::parse_stored(Some(t)))
            .unwrap_or(0),
    )
}

fn bytes(value: &Value) -> Option<&[u8]> {
    match value {
        Value::BulkString(b) => Some(b),
        _ => None,
    }
}
