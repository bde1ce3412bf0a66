//! What a hand-over's replies say: the job taken, if everything read after
//! the move says it may start (see the module's documentation for why no
//! limit is exceeded), else what the fetch script is left to decide.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redis::Value;

use super::memory::{note_parked_left, note_read};
use super::HandOver;
use crate::limits::parse_stored;
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
        let at = &self.layout;
        let replies = self.read(replies)?;
        let (Value::Int(1), Value::BulkString(job), Value::Array(state)) =
            (&replies[at.acked], &replies[at.moved], &replies[at.state])
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
        let limits = self.carried();
        if values.len() != 2 * limits.len()
            || rate_release_due(rate_due)
            || values.chunks(2).any(|v| v[1] != Value::Nil)
        {
            return None;
        }
        let stored: Vec<&Value> = values.iter().step_by(2).collect();
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
        let same = match &self.limits {
            Some((carried, _)) => job.starts_with(&carried.head),
            None => !carries_job_limits(job),
        };
        if !same {
            return None;
        }
        if let Some(Value::Int(parked)) = at.parked_lists.map(|i| &replies[i]) {
            // From the queue, a job would overtake the parked ones.
            if *parked > 0 && !self.from_parked_list {
                return None;
            }
            let counts = &replies[at.job_busy.clone()];
            for ((carried, stored), busy) in limits.iter().zip(&stored).zip(counts) {
                let Value::Int(busy) = busy else {
                    return None;
                };
                let limit = stored_limit(stored)?.unwrap_or(carried.concurrency);
                if count(*busy) > limit {
                    return None;
                }
            }
        }
        let (more, queued) = match at.queued.map(|i| &replies[i]) {
            Some(Value::Int(queued)) => (
                *queued > 0 && limit.map_or(true, |limit| busy < limit),
                *queued > 0,
            ),
            _ => (false, true),
        };
        Some((job.clone(), more, queued))
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
        if let Some(Value::Int(parked)) = at.parked_lists.map(|i| &replies[i]) {
            note_parked_left(self.capsule, *parked > 0);
        }
    }

    /// What the replies say. Replies that do not say the acknowledgement
    /// freed the slot hand in none: a busy entry left over lowers the limit
    /// until the capsule next reconciles, where a slot freed twice would let
    /// one job too many run.
    pub(in crate::capsule) fn outcome(self, replies: Value) -> Outcome {
        self.note_found(&replies);
        if let Some((job, more, queued)) = self.taken(&replies) {
            let fetched = Fetched {
                queue: self.queue,
                job,
            };
            return Outcome::Taken(Look::handed_over(fetched, more), queued);
        }
        let at = &self.layout;
        let (slot_passed, job) = match self.read(&replies) {
            Some(r) => (
                matches!(r[at.acked], Value::Int(1)),
                match &r[at.moved] {
                    Value::BulkString(job) => Some(job.clone()),
                    _ => None,
                },
            ),
            _ => (false, None),
        };
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
        })
    }
}

/// A stored limit as read: `Some(None)` for none, `None` for a reply that
/// is neither.
fn stored_limit(value: &Value) -> Option<Option<u64>> {
    match value {
        Value::Nil => Some(None),
        Value::BulkString(raw) => Some(Some(limit_value(raw))),
        _ => None,
    }
}

/// A list's length (never negative).
fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
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

/// A stored limit's value as the scripts read it (limits.rs): a broken one
/// reads as 0.
fn limit_value(raw: &[u8]) -> u64 {
    std::str::from_utf8(raw)
        .ok()
        .and_then(|text| parse_stored(Some(text)))
        .unwrap_or(0)
}
