//! What a hand-over's replies say: the job taken, if everything read after
//! the move says it may start (see the module's documentation for why no
//! limit is exceeded), else what the fetch script is left to decide.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redis::Value;

use super::keyed::{Booking, Keyed};
use super::lease;
use super::memory::{note_parked_left, note_read};
use super::values::{count, stored_limit};
use super::HandOver;
use crate::carried::Carried;
use crate::script::fetch::{carries_job_limits, Fetched, Handed, Look};

/// How soon before jobs parked behind a rate may go (by Redis's clock, as
/// this host's reads it) a hand-over leaves the fetch to the script.
const RATE_DUE_SOON: Duration = Duration::from_secs(1);

/// What a hand-over's replies say.
pub(in crate::capsule) enum Outcome {
    /// The look: the next job, taken under the finished job's slot, and
    /// whether another may be eligible; and whether its queue holds another
    /// (known only while fetchers sleep).
    Taken(Look, bool),
    /// For the fetch script to decide.
    Decide(Handed),
    /// A keyed hand-over's second round trip, to send on the same
    /// connection (keyed.rs): the hand-over, and its request.
    Book(Box<HandOver>, Vec<u8>),
}

/// What the first round trip read that lets the moved job start, but for
/// job limits: the job, the job limits' values and the replies, whether
/// another job may be eligible and whether the queue holds another.
struct Read<'a> {
    job: &'a Vec<u8>,
    values: &'a [Value],
    replies: &'a [Value],
    more: bool,
    queued: bool,
    /// The capsule's heartbeat key existed (read with a deferred
    /// acknowledgement only; else true).
    alive: bool,
}

impl HandOver {
    /// The pipeline's replies (all of them), or `None` for anything else.
    fn read<'a>(&self, replies: &'a Value) -> Option<&'a [Value]> {
        match replies {
            Value::Array(all) if all.len() == self.layout.replies => Some(all),
            _ => None,
        }
    }

    /// The job taken, if the replies (an array of [`HandOver::replies`])
    /// say the slots passed to it and it may start; whether another may be
    /// eligible; whether the queue holds another.
    pub(in crate::capsule) fn taken(&self, replies: &Value) -> Option<(Vec<u8>, bool, bool)> {
        if let Some(keyed) = &self.keyed {
            let taken = keyed.taken(replies);
            return taken.then(|| (keyed.job.clone(), keyed.more, keyed.queued));
        }
        if self.deferred.is_some() {
            return None;
        }
        let read = self.passes(replies)?;
        let (job, replies, at) = (read.job, read.replies, &self.layout);
        let same = match &self.limits {
            Some((carried, _)) => job.starts_with(&carried.head),
            None => !carries_job_limits(job),
        };
        if !same {
            return None;
        }
        if !self.carried().is_empty() {
            // From the queue, a job would overtake the parked ones; from a
            // parked list (no `EXISTS`), it is the oldest of them.
            let bare = lease::bare(self.carried());
            let parked = match at.parked_lists.map(|i| &replies[i]) {
                Some(Value::Int(parked)) => *parked,
                None if self.from_parked_list || bare => 0,
                _ => return None,
            };
            // A bare rate's stored concurrency, unread, is the script's.
            if bare && read.values.first() != Some(&Value::Nil) {
                return None;
            }
            if parked > 0 || !self.lease_covers(replies) {
                return None;
            }
            let counts = &replies[at.job_busy.clone()];
            let stored = read.values.iter().step_by(2);
            for ((carried, stored), busy) in self.carried().iter().zip(stored).zip(counts) {
                let Value::Int(busy) = busy else {
                    return None;
                };
                let limit = stored_limit(stored)?.unwrap_or(carried.concurrency);
                if count(*busy) > limit {
                    return None;
                }
            }
        }
        Some((job.clone(), read.more, read.queued))
    }

    /// What the first round trip's replies say of the queue, if its moved
    /// job may start but for job limits (see [`Read`]).
    fn passes<'a>(&self, replies: &'a Value) -> Option<Read<'a>> {
        let at = &self.layout;
        let replies = self.read(replies)?;
        let acked = at.acked.map_or(true, |i| replies[i] == Value::Int(1));
        let (true, Value::BulkString(job), Value::Array(state)) =
            (acked, &replies[at.moved], &replies[at.state])
        else {
            return None;
        };
        // A class backing off in the queue, or a back-off of a job limit,
        // sends the job to the script, which parks it; so does a fair
        // queue's limit, set since this thread noted the queue: the script
        // writes each job's share into it (lua/fetch/fair_queue.lua).
        let [limit, Value::Nil, Value::Nil, Value::Nil, rate_due, _, Value::Nil, Value::Nil, values @ ..] =
            state.as_slice()
        else {
            return None;
        };
        // A deferred acknowledgement's heartbeat, last (see `booking`).
        let (values, alive) = match values {
            [values @ .., heartbeat] if self.deferred.is_some() => {
                (values, *heartbeat != Value::Nil)
            }
            _ => (values, true),
        };
        // A rated limit's jobs sent back for its rate, not started, before
        // it: their starts are the script's (lease.rs).
        let values = match values {
            [values @ .., Value::Nil] if self.lease.is_some() => values,
            _ if self.lease.is_some() => return None,
            _ => values,
        };
        // A bare rate's parked jobs, unread, are the script's (lease.rs).
        let parked_rates = lease::bare(self.carried()) && *rate_due != Value::Nil;
        if values.len() != 2 * self.carried().len()
            || parked_rates
            || rate_release_due(rate_due)
            || values.chunks(2).any(|v| v[1] != Value::Nil)
        {
            return None;
        }
        let limit = stored_limit(limit)?;
        // Uncounted, a limit set since sends the job to the script.
        let busy = match at.busy.map(|i| &replies[i]) {
            Some(Value::Int(busy)) => count(*busy),
            None if limit.is_none() => 0,
            _ => return None,
        };
        if limit.is_some_and(|limit| busy > limit) {
            return None;
        }
        let (more, queued) = match at.queued.map(|i| &replies[i]) {
            Some(Value::Int(queued)) => (
                *queued > 0 && limit.map_or(true, |limit| busy < limit),
                *queued > 0,
            ),
            _ => (false, true),
        };
        Some(Read {
            job,
            values,
            replies,
            more,
            queued,
            alive,
        })
    }

    /// Whether the start of a run's rated limit is covered by the lease
    /// (lease.rs), asked once: the answer stands, as the reply came when it
    /// was first asked. True without a rated limit.
    fn lease_covers(&self, replies: &[Value]) -> bool {
        let Some(lease) = &self.lease else {
            return true;
        };
        if let Some(covered) = self.covered.get() {
            return covered;
        }
        let covered = lease.covers(self.layout.grant.map(|i| &replies[i]));
        self.covered.set(Some(covered));
        covered
    }

    /// A keyed hand-over's booking, if the first round trip says the moved
    /// job may start but for its job limits, which differ from a run's (no
    /// slot of them passed), and which [`Carried`] reads; or it carries none
    /// and the acknowledgement waits (its slots to free). A deferred
    /// acknowledgement frees its job's slots only if the capsule's
    /// heartbeat key existed: a reaper takes only capsules without one, and
    /// frees their slots itself (the script, deciding instead, frees a
    /// job's slots only if the job is still in progress).
    fn booking(&self, replies: &Value) -> Option<Booking<'_>> {
        if self.keyed.is_some() || self.limits.is_some() {
            return None;
        }
        let read = self.passes(replies).filter(|read| read.alive)?;
        let booked = match Carried::read(read.job) {
            // A rated limit's start is the script's to count.
            Some(carried) if carried.limits.iter().any(|l| l.rate.is_some()) => return None,
            Some(carried) => carried.limits,
            None if self.deferred.is_some() && !carries_job_limits(read.job) => Vec::new(),
            None => return None,
        };
        Some(Booking {
            job: read.job.clone(),
            booked,
            acked: self
                .deferred
                .as_ref()
                .map(|(carried, job)| (&job[..], &carried.limits[..])),
            more: read.more,
            queued: read.queued,
        })
    }

    /// Notes, for the next hand-over, what it read of the queue (see
    /// [`note_read`]), and whether the run's job limit has parked jobs
    /// left (the `EXISTS` after the move).
    fn note_found(&self, replies: &Value) {
        let Some(replies) = self.read(replies) else {
            return;
        };
        let at = &self.layout;
        if let Value::Array(state) = &replies[at.state] {
            let recovered = match state.get(5) {
                Some(Value::BulkString(raw)) => Some(raw.clone()),
                _ => None,
            };
            let gone = match at.recoveries.map(|i| &replies[i]) {
                Some(Value::Int(n)) => Some(*n == 0),
                _ => None,
            };
            let limited = !matches!(state.first(), Some(Value::Nil));
            note_read(self.capsule, limited, recovered, gone);
        }
        match at.parked_lists.map(|i| &replies[i]) {
            Some(Value::Int(parked)) => note_parked_left(self.capsule, *parked > 0),
            // From a parked list, until a move finds it empty.
            None if self.from_parked_list => {
                let moved = matches!(replies[at.moved], Value::BulkString(_));
                note_parked_left(self.capsule, moved);
            }
            _ => {}
        }
    }

    /// What the replies say. Replies that do not say the acknowledgement
    /// freed the slot hand in none: a busy entry left over lowers the limit
    /// until the capsule next reconciles, where a slot freed twice would let
    /// one job too many run.
    pub(in crate::capsule) fn outcome(mut self, replies: Value) -> Outcome {
        if self.keyed.is_none() {
            self.note_found(&replies);
        }
        let taken = self.taken(&replies);
        if let (Some(lease), Some(read)) = (&self.lease, self.read(&replies)) {
            lease.settle(self.layout.grant.map(|i| &read[i]), taken.is_some());
            // Parked rates (`rate_due`, the `MGET`'s fifth): a bare rate's
            // next jobs are the script's a while (lease.rs).
            if let Value::Array(state) = &read[self.layout.state] {
                lease.note_parked(state.get(4).is_some_and(|due| *due != Value::Nil));
            }
        }
        if let Some((job, more, queued)) = taken {
            let fetched = Fetched {
                queue: self.queue,
                job,
            };
            return Outcome::Taken(Look::handed_over(fetched, more), queued);
        }
        if let Some(keyed) = self.keyed.take() {
            return Outcome::Decide(keyed.handed(self.queue, &replies));
        }
        if let Some(booking) = self.booking(&replies) {
            let (keyed, request) = Keyed::build(&self.queue, &self.uuid, booking);
            self.keyed = Some(Box::new(keyed));
            return Outcome::Book(Box::new(self), request);
        }
        let at = &self.layout;
        let (slot_passed, job) = match self.read(&replies) {
            Some(r) => (
                at.acked.is_some_and(|i| r[i] == Value::Int(1)),
                match &r[at.moved] {
                    Value::BulkString(job) => Some(job.clone()),
                    _ => None,
                },
            ),
            _ => (false, None),
        };
        // A deferred acknowledgement rides on the script.
        let acks_ride = self.deferred.is_some();
        let from_limit = match self.carried() {
            [limit] if self.from_parked_list => Some(limit.id.clone()),
            _ => None,
        };
        Outcome::Decide(Handed {
            queue: self.queue,
            slot_passed,
            job,
            acked: self.limits.map(|(_, job)| job),
            from_limit,
            keyed: false,
            acks_ride,
        })
    }

    /// What the script decides of a keyed hand-over whose second round
    /// trip was never sent (its look was dropped): as of the first.
    pub(in crate::capsule) fn unbooked(&self) -> Handed {
        Handed {
            queue: self.queue.clone(),
            slot_passed: self.deferred.is_none(),
            job: self.keyed.as_ref().map(|k| k.job.clone()),
            acked: None,
            from_limit: None,
            keyed: false,
            acks_ride: self.deferred.is_some(),
        }
    }
}

/// Whether jobs parked behind a rate may go soon, by `RATE_DUE` (the
/// earliest time their windows open, µs of Redis's clock; nil when none
/// are parked). A value that does not read as a time says yes.
fn rate_release_due(due: &Value) -> bool {
    let micros: f64 = match due {
        Value::Nil => return false,
        Value::BulkString(raw) => {
            match std::str::from_utf8(raw).ok().and_then(|t| t.parse().ok()) {
                Some(value) => value,
                None => return true,
            }
        }
        _ => return true,
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_micros() as f64);
    micros - now <= RATE_DUE_SOON.as_micros() as f64
}
