//! The fetch script's reply: what one run found (a job taken, jobs
//! discarded, what the doorbell needs to know), read from its array.

use std::time::{Duration, Instant};

use redis::Value;

use super::super::decode;
use crate::ledger::Ack;
use crate::Result;

/// A job taken from a queue, with a busy slot booked for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// The queue's name, without Sidekiq's `queue:` prefix.
    pub queue: String,
    pub job: Vec<u8>,
}

/// A job a fetch dropped because one of its limits was full and said
/// `on_limit: :discard`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discarded {
    /// Its whole payload, as it was in its queue: no other copy is left.
    pub job: Vec<u8>,
    /// The id of the job limit that was full.
    pub limit: String,
}

/// What one run of the fetch script found.
#[derive(Debug, Default)]
pub(crate) struct Look {
    pub(crate) fetched: Option<Fetched>,
    /// With a job: another is eligible for this capsule after it. Without:
    /// the look stopped after setting aside as many jobs as it may, and the
    /// next may find one.
    pub(crate) more: bool,
    pub(crate) discarded: Vec<Discarded>,
    /// With a job: its queue has a process limit, a rate, classes that back
    /// off or an adaptive limit, or a rate of its job limits has jobs sent
    /// back for it still to start (such a queue is left to the script: see
    /// capsule/hand_over/).
    pub(crate) left_to_script: bool,
    /// With a job: it was parked, sent back by this fetch (its job limits
    /// may have more parked).
    pub(crate) was_parked: bool,
    /// With a job, in the modes that report: how many jobs its queue still
    /// holds.
    pub(crate) queued: Option<i64>,
    /// A rate holds something back that it may let go this much later: a
    /// fetcher with nothing else to do sleeps no longer than that.
    pub(crate) opens_in: Option<Duration>,
    /// With `opens_in`, when (Redis's clock, microseconds): the same for
    /// every look that saw the same window.
    pub(crate) opens_at: Option<i64>,
    /// When its request was sent, if known: the script ran soon after.
    pub(crate) sent: Option<Instant>,
    /// The script took, parked or discarded a job, or sent parked jobs back.
    wrote: bool,
}

type Reply = (
    Option<String>,
    Option<Vec<u8>>,
    i64,
    Vec<(Vec<u8>, String)>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
);

/// A reply's "opens in" (microseconds, or nil) as a duration.
fn opens_in(micros: Option<i64>) -> Option<Duration> {
    micros.map(|us| Duration::from_micros(u64::try_from(us).unwrap_or(0)))
}

impl Look {
    /// This look, its request sent at `sent`, if known.
    pub(crate) fn sent_at(mut self, sent: Option<Instant>) -> Self {
        self.sent = sent;
        self
    }

    /// The script's reply: `{queue or false, job or false, more, discarded,
    /// process limited or rated, queued, opens in, parked, opens at}` (the
    /// last five may be missing) or nil (see lua/fetch/state.lua).
    pub(crate) fn from_value(value: Value) -> Result<Self> {
        let value = match value {
            Value::Array(mut items) if items.len() < 9 => {
                items.resize(9, Value::Nil);
                Value::Array(items)
            }
            other => other,
        };
        let Some((
            queue,
            job,
            more,
            discarded,
            left_to_script,
            queued,
            opens,
            was_parked,
            opens_at,
        )) = decode::<Option<Reply>>(value)?
        else {
            return Ok(Look::default());
        };
        let fetched = queue.zip(job).map(|(queue, job)| Fetched { queue, job });
        Ok(Look {
            left_to_script: left_to_script == Some(1),
            was_parked: was_parked == Some(1),
            queued,
            opens_in: opens_in(opens),
            opens_at: opens.and(opens_at),
            sent: None,
            fetched,
            more: more == 1,
            discarded: discarded
                .into_iter()
                .map(|(job, limit)| Discarded { job, limit })
                .collect(),
            wrote: true,
        })
    }

    /// What an arming (Mode::Arm) found: whether an eligible queue holds a
    /// job, and when a rate opens (in, at), its request sent at `sent`.
    pub(super) fn armed(
        more: bool,
        opens: Option<i64>,
        opens_at: Option<i64>,
        sent: Instant,
    ) -> Self {
        Look {
            more,
            opens_in: opens_in(opens),
            opens_at: opens.and(opens_at),
            sent: Some(sent),
            ..Look::default()
        }
    }

    /// A job a hand-over took (see capsule/hand_over/); `more`: another
    /// may be eligible.
    pub(crate) fn handed_over(fetched: Fetched, more: bool) -> Self {
        Look {
            fetched: Some(fetched),
            more,
            wrote: true,
            ..Look::default()
        }
    }

    /// Nothing taken or set aside, nothing acknowledged: the script wrote
    /// no key.
    pub(super) fn wrote_nothing(&self, acks: &[Ack]) -> bool {
        acks.is_empty() && !self.wrote
    }
}
