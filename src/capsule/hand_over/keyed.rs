//! A keyed hand-over's second round trip: the moved job's limits booked
//! optimistically, with the reads that prove each booking within its limit
//! (see the module's documentation), and, where the first round trip left
//! it, the acknowledgement with its job's slots freed, its writes then in
//! a transaction:
//!
//! ```text
//! MULTI                     with the acknowledgement: runs the writes only
//!                           if the heartbeat the first read is unchanged
//! LREM   job-busy 1 <uuid>  (one a limit of the acknowledged job, if left)
//! LREM   in-progress 1 <finished job>   the acknowledgement, if left
//! RPUSH  job-busy <uuid>    (one a limit of the moved job): its count after
//! EXEC                      with the MULTI: the replies above, or nil
//! MGET   job-limit job-back-off...      each such limit's stored value and
//!                                       back-off
//! EXISTS parked...          every limit above: whether any has parked jobs
//! ```
//!
//! The reads go after the `EXEC`, outside the transaction (Redis queues
//! each command of one, and answers each `QUEUED`: two fewer a keyed job):
//! they only check what the writes did, as they do in a pipeline without
//! the acknowledgement, and, the transaction aborted, nothing they read is
//! used.
//!
//! The `LREM`s of the busy lists remove an entry of the capsule, any of
//! its jobs' of the same limit: right only while the capsule was not
//! reaped since the first round trip read its heartbeat key. A reaper
//! (which takes only capsules without one, and deletes it) frees all of its
//! entries and pushes its jobs back; woken, another processor of the
//! capsule may book a slot of the same limit before this round trip lands,
//! and an `LREM` would free that one: one job too many could start under
//! the limit until the capsule reconciles. So the first round trip
//! `WATCH`es the heartbeat key before reading it, and the second's writes
//! are a transaction that Redis runs only if nothing wrote, deleted or
//! expired the key since (a beat's write, every heartbeat period, aborts
//! one for nothing): aborted, none of them ran, and the script decides as
//! of the first round trip, the acknowledgement riding with it.

use std::ops::Range;

use redis::Value;

use super::values::{count, stored_limit};
use crate::carried::CarriedLimit;
use crate::keys;
use crate::script::fetch::Handed;

/// A keyed hand-over's second round trip, as built.
pub(super) struct Keyed {
    /// The job the first round trip moved.
    pub(super) job: Vec<u8>,
    /// Its job limits, each booked by an `RPUSH`.
    booked: Vec<CarriedLimit>,
    /// The acknowledged job, if its acknowledgement rides here.
    acked: Option<Vec<u8>>,
    /// What the first round trip read of the queue: whether another job
    /// may be eligible, whether it holds another.
    pub(super) more: bool,
    pub(super) queued: bool,
    layout: Layout,
}

/// Where each read reply is (see pipeline.rs's), in the order of the
/// commands, the `MULTI` and `EXEC` left out: within a transaction, the
/// first `written` are in the `EXEC`'s reply.
struct Layout {
    replies: usize,
    /// Sent as a transaction (with the acknowledgement).
    transaction: bool,
    /// How many commands write (the `LREM`s and `RPUSH`es), the first.
    written: usize,
    acked: Option<usize>,
    pushed: Range<usize>,
    values: Option<usize>,
    parked: Option<usize>,
}

/// The moved job `job` and its limits `booked`, the acknowledged job and
/// its limits if its acknowledgement rides here, and the first round trip's
/// `more` and `queued`.
pub(super) struct Booking<'a> {
    pub(super) job: Vec<u8>,
    pub(super) booked: Vec<CarriedLimit>,
    pub(super) acked: Option<(&'a [u8], &'a [CarriedLimit])>,
    pub(super) more: bool,
    pub(super) queued: bool,
}

impl Keyed {
    /// The second round trip of a hand-over from `queue` for `booking`,
    /// encoded, and its state.
    pub(super) fn build(queue: &str, uuid: &str, booking: Booking) -> (Keyed, Vec<u8>) {
        let in_progress = keys::in_progress(uuid, queue);
        let mut pipe = redis::pipe();
        let mut n = 0;
        let transaction = booking.acked.is_some();
        if transaction {
            pipe.cmd("MULTI");
        }
        let freed = booking.acked.map_or(&[][..], |(_, limits)| limits);
        // Its slots before its job: while the job is in the in-progress
        // list, a reaper finds them by it (reap.lua).
        for limit in freed {
            pipe.cmd("LREM")
                .arg(keys::job_busy(&limit.id))
                .arg(1)
                .arg(uuid);
            n += 1;
        }
        let acked = booking.acked.map(|(job, _)| {
            pipe.cmd("LREM").arg(&in_progress).arg(1).arg(job);
            n += 1;
            n - 1
        });
        for limit in &booking.booked {
            pipe.cmd("RPUSH").arg(keys::job_busy(&limit.id)).arg(uuid);
        }
        let pushed = n..n + booking.booked.len();
        n = pushed.end;
        if transaction {
            pipe.cmd("EXEC");
        }
        let written = n;
        let values = (!booking.booked.is_empty()).then(|| {
            let mget = pipe.cmd("MGET");
            for limit in &booking.booked {
                mget.arg(keys::job_limit(&limit.id))
                    .arg(keys::job_back_off(&limit.id));
            }
            n += 1;
            n - 1
        });
        let parked = (!booking.booked.is_empty() || !freed.is_empty()).then(|| {
            let exists = pipe.cmd("EXISTS");
            for limit in booking.booked.iter().chain(freed) {
                exists.arg(keys::parked(&limit.id));
            }
            n += 1;
            n - 1
        });
        let keyed = Keyed {
            job: booking.job,
            booked: booking.booked,
            acked: booking.acked.map(|(job, _)| job.to_vec()),
            more: booking.more,
            queued: booking.queued,
            layout: Layout {
                replies: n,
                transaction,
                written,
                acked,
                pushed,
                values,
                parked,
            },
        };
        (keyed, pipe.get_packed_pipeline())
    }

    /// How many replies its pipeline gets (a transaction's: the `MULTI`'s,
    /// each command's `QUEUED` and the `EXEC`'s).
    pub(super) fn replies(&self) -> usize {
        match self.layout.transaction {
            true => self.layout.replies + 2,
            false => self.layout.replies,
        }
    }

    /// Its commands' replies in their order, if they ran (a transaction's
    /// writes, in the `EXEC`'s reply: nil if aborted, and then none).
    fn read<'a>(&self, replies: &'a Value) -> Option<Vec<&'a Value>> {
        let at = &self.layout;
        let all = match replies {
            Value::Array(all) if all.len() == self.replies() => all,
            _ => return None,
        };
        if !at.transaction {
            return Some(all.iter().collect());
        }
        // The MULTI's, each write's QUEUED, the EXEC's, then the reads'.
        let (queued, reads) = all.split_at(at.written + 2);
        match queued.last() {
            Some(Value::Array(ran)) if ran.len() == at.written => {
                Some(ran.iter().chain(reads).collect())
            }
            _ => None,
        }
    }

    /// Whether the replies say the job may start: the acknowledgement (if
    /// here) found its job, each booking counts no more than its limit (the
    /// stored one, else the declared concurrency), no limit backs off, and
    /// none of them has parked jobs (the moved job's would be overtaken,
    /// the acknowledged job's are the script's to send).
    pub(super) fn taken(&self, replies: &Value) -> bool {
        let at = &self.layout;
        let Some(replies) = self.read(replies) else {
            return false;
        };
        if at.acked.is_some_and(|i| *replies[i] != Value::Int(1)) {
            return false;
        }
        if at.parked.is_some_and(|i| *replies[i] != Value::Int(0)) {
            return false;
        }
        let values = match at.values.map(|i| replies[i]) {
            Some(Value::Array(values)) if values.len() == 2 * self.booked.len() => values,
            None => return true,
            _ => return false,
        };
        let pushed = &replies[at.pushed.clone()];
        self.booked
            .iter()
            .zip(values.chunks(2))
            .zip(pushed)
            .all(|((limit, values), pushed)| {
                let (Value::Int(n), Some(stored), Value::Nil) =
                    (pushed, stored_limit(&values[0]), &values[1])
                else {
                    return false;
                };
                count(*n) <= stored.unwrap_or(limit.concurrency)
            })
    }

    /// What the script is left to decide (lua/fetch/state.lua's ARGV[10]):
    /// the slots booked count as freed, and the acknowledged job's send
    /// their parked jobs. Unless a booking was refused: then nothing says
    /// which were made, and the capsule's next reconciliation counts them.
    /// A transaction that did not run leaves all to the script, as of the
    /// first round trip: the job it moved, the acknowledgement riding.
    pub(super) fn handed(self, queue: String, replies: &Value) -> Handed {
        let at = &self.layout;
        let ran = self.read(replies);
        if at.transaction && ran.is_none() {
            return Handed {
                queue,
                slot_passed: false,
                job: Some(self.job),
                acked: None,
                from_limit: None,
                keyed: false,
                acks_ride: true,
            };
        }
        let replies = ran.unwrap_or_default();
        let reply = |i: usize| replies.get(i).copied().unwrap_or(&Value::Nil);
        let booked = replies.len() == at.replies
            && replies[at.pushed.clone()]
                .iter()
                .all(|r| matches!(r, Value::Int(_)));
        Handed {
            queue,
            slot_passed: at.acked.map_or(true, |i| *reply(i) == Value::Int(1)),
            job: Some(self.job),
            acked: self.acked.filter(|_| booked),
            from_limit: None,
            keyed: booked,
            acks_ride: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::values::command_names as names;

    fn limits(n: usize) -> Vec<CarriedLimit> {
        (0..n)
            .map(|i| CarriedLimit {
                id: format!("key:K#{i}"),
                concurrency: 1,
                rate: None,
            })
            .collect()
    }

    /// The finished job's slots are freed before its acknowledgement (while
    /// it is in progress, a reap finds them by it), both in a transaction
    /// with the bookings, the reads after it, and every read reply is where
    /// the layout says.
    #[test]
    fn the_slots_go_before_the_acknowledgement_and_the_layout_points_at_its_commands() {
        let acked_limits = limits(2);
        for (acked, booked) in [(true, 1), (true, 0), (false, 2), (true, 3)] {
            let booking = Booking {
                job: b"{}".to_vec(),
                booked: limits(booked),
                acked: acked.then_some((&b"{\"a\":1}"[..], &acked_limits[..])),
                more: false,
                queued: true,
            };
            let (keyed, packed) = Keyed::build("q", "u", booking);
            let all = names(&packed);
            assert_eq!(all.len(), keyed.replies(), "{all:?}");
            // With the acknowledgement, a transaction of the writes, the
            // reads after it.
            let at = &keyed.layout;
            let freed = if acked { acked_limits.len() } else { 0 };
            assert_eq!(at.written, freed + usize::from(acked) + booked);
            let sent: Vec<String> = match acked {
                true => {
                    assert_eq!(all[0], "MULTI");
                    assert_eq!(all[at.written + 1], "EXEC");
                    assert!(all[1..=at.written]
                        .iter()
                        .all(|c| c == "LREM" || c == "RPUSH"));
                    let reads = &all[at.written + 2..];
                    assert!(reads.iter().all(|c| c == "MGET" || c == "EXISTS"));
                    all[1..=at.written].iter().chain(reads).cloned().collect()
                }
                false => all.clone(),
            };
            assert!(!sent.iter().any(|c| c == "MULTI" || c == "EXEC"));
            assert_eq!(at.transaction, acked);
            assert_eq!(sent.len(), at.replies, "{sent:?}");
            assert!(sent[..freed].iter().all(|c| c == "LREM"));
            assert_eq!(at.acked, acked.then_some(freed));
            assert!(sent[at.pushed.clone()].iter().all(|c| c == "RPUSH"));
            assert_eq!(at.pushed.len(), booked);
            assert_eq!(
                at.values.map(|i| sent[i].as_str()),
                (booked > 0).then_some("MGET")
            );
            assert_eq!(at.parked.map(|i| sent[i].as_str()), Some("EXISTS"));
        }
    }
}
