//! The hand-over: a processor that finished a job and fetches again with
//! that job's queue first takes the queue's next job under the finished
//! job's slot, without the fetch script. One pipeline on its own connection:
//!
//! ```text
//! LREM  in-progress 1 <finished job>   the acknowledgement
//! HDEL  recoveries <its digest>        as the script's acknowledgement does,
//!                                      unless recoveries are known gone
//! LMOVE queue in-progress RIGHT LEFT   the next job, under the same slot
//! MGET  limit process_limit paused     the queue's state after the move,
//!       rate rate_due recovered        its rate, when parked rates are due,
//!                                      the count of reaps that recovered jobs,
//! LLEN  busy                           and its count (the slot included),
//!                                      while it has a limit
//! EXISTS recoveries                    with the HDEL: whether any are left
//! ```
//!
//! The `HDEL` forgets the finished job's recovery count (if a reaper
//! recovered it). It is left out where this thread read `recovered`
//! unchanged, in the pipeline that moved the job, since a pipeline found
//! `recoveries` gone: a reaper that recovers a job (and counts it) changes
//! `recovered` in the same script, before the job is back in its queue to
//! be moved.
//!
//! and, while fetchers sleep on the doorbell, `LLEN` of the queue: whether
//! another job may be eligible, to wake one (the script's `more`).
//!
//! A job that carries job limits (a class's, a key's) passes their slots
//! too, to a next job that carries the same ([`Carried::head`]: the same
//! limits and queue), where the last two jobs this thread finished carried
//! the same (a run of them: a class's jobs, a hot key's). The pipeline then
//! also reads each limit's stored value (in the `MGET`) and count
//! (`LLEN`), and whether it has parked jobs (one `EXISTS`), which go first:
//! once a hand-over from the queue finds some, the next ones take them,
//! oldest first, from the limit's parked list instead of the queue (a
//! job of one limit only: a job parked by one of several limits may be
//! behind the parked jobs of another). It opens with an `SADD` of their
//! ids to the capsule's set of run limits: a job limit's slot is otherwise
//! found, if the capsule dies, by the job that holds it, in an in-progress
//! list (reap.lua), and the job this pipeline moves may carry other limits.
//! The script that ends the run takes them out once the capsule holds no
//! slot of them.
//!
//! Sidekiq Pro's super_fetch (LMOVE, LREM) and three reads, without the
//! script's call: Redis spends about a third of what the script costs it
//! (bench/results/profile.md).
//!
//! Why no limit is exceeded: the job is handed to Sidekiq only if what was
//! read after the move says the queue is not paused, has no process limit
//! and no rate (whose starts the script counts), and holds no more slots
//! than its limit (the passed slot counted; a queue that had no limit at
//! the last hand-over is not counted, and a limit read after the move
//! sends the job to the script, which counts), and the same of each job
//! limit the job carries (no rate: [`Carried`] reads none). Then
//! it starts within the limit: since the read, every other capsule booked
//! a slot only below it. Anything else (a pause, a process limit, a queue
//! over a lowered limit, an empty queue, a finished job no longer in the
//! in-progress list because it was reaped, a new job carrying job limits,
//! an error reply, a job limit's parked jobs the job would overtake) is left
//! to the fetch script on the same connection, which decides the moved job
//! as a fetch would, and frees the job limits' slots the acknowledged job
//! passed, sending their parked jobs first (fetch.lua's ARGV[5..9]).
//!
//! Jobs parked behind a rate go back only with a script (fetch.lua's
//! `release_opened`): a hand-over leaves it to the script once their window
//! opens within [`RATE_DUE_SOON`] by this host's clock (the margin stands
//! for the clocks' difference), so that a thread handing over one job after
//! another cannot keep them parked.
//!
//! A hand-over is tried only where it should succeed: for a queue a script
//! on this thread last took a job of, without a process limit or a rate
//! then ([`note`]); a queue with either pays the script alone, not both. While
//! fetchers sleep (the queue ran dry lately), only if the last look said
//! another job was there: a hand-over that finds the queue empty costs a
//! round trip more than the script.
//!
//! A capsule taken for dead (frozen, or cut off past its heartbeat's
//! expiry) between a hand-over and the script that decides after it had its
//! slots freed by the reaper, the passed one included: the script frees
//! the passed slot only while the capsule's heartbeat key exists (a reaper
//! takes only capsules without one), and a moved job found gone frees
//! nothing (fetch.lua's `adopt`). A capsule that beat again in between, and
//! so frees the slot a second time, reconciles its slots as soon as the
//! script is done: every beat does, and the beat waits for the look.

use std::cell::RefCell;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redis::Value;

use crate::carried::Carried;
use crate::keys;
use crate::ledger::Ack;
use crate::limits::parse_stored;
use crate::script::fetch::{carries_job_limits, Handed, Look, Mode};

/// The replies a hand-over's pipeline always gets: `LREM`, `LMOVE`, `MGET`.
const ALWAYS: usize = 3;

/// How soon before jobs parked behind a rate may go (by Redis's clock, as
/// this host's reads it) a hand-over leaves the fetch to the script.
const RATE_DUE_SOON: Duration = Duration::from_secs(1);

/// The queue a fetch script last took a job of on this thread, for a
/// capsule, on a master, if that queue had no process limit or rate; and whether
/// the last look left a job in it (known while fetchers sleep: a look then
/// reports it).
struct Hint {
    capsule: u64,
    generation: u64,
    queue: String,
    more: bool,
    /// The queue had a limit when a hand-over last read it (unknown after
    /// a script: yes). Without one, its busy list is not counted.
    limited: bool,
    /// `recovered` as the last hand-over read it, and as read where
    /// `recoveries` was then found gone (unknown after a script).
    recovered: Option<Vec<u8>>,
    clean_at: Option<Option<Vec<u8>>>,
}

/// The job limits of the last job this thread acknowledged for a capsule,
/// and whether the last hand-over of them found parked jobs left.
struct Run {
    capsule: u64,
    head: Vec<u8>,
    parked: bool,
}

thread_local! {
    static HINTS: RefCell<Vec<Hint>> = const { RefCell::new(Vec::new()) };
    static RUNS: RefCell<Vec<Run>> = const { RefCell::new(Vec::new()) };
}

/// Whether `carried` continues a run: the job this thread acknowledged
/// before for `capsule` carried the same. Then `Some` of whether parked
/// jobs were left; else `None`, and `carried` starts a run.
fn continues_run(capsule: u64, carried: &Carried) -> Option<bool> {
    RUNS.with(|runs| {
        let mut runs = runs.borrow_mut();
        match runs.iter_mut().find(|r| r.capsule == capsule) {
            Some(run) if run.head == carried.head => Some(run.parked),
            Some(run) => {
                run.head.clone_from(&carried.head);
                run.parked = false;
                None
            }
            None => {
                runs.push(Run {
                    capsule,
                    head: carried.head.clone(),
                    parked: false,
                });
                None
            }
        }
    })
}

/// Notes whether the run of `capsule` has parked jobs left.
fn note_parked(capsule: u64, parked: bool) {
    RUNS.with(|runs| {
        if let Some(run) = runs.borrow_mut().iter_mut().find(|r| r.capsule == capsule) {
            run.parked = parked;
        }
    });
}

/// Records what a fetch script on this thread's connection found.
pub(super) fn note(capsule: u64, generation: u64, look: &Look) {
    if look.parked {
        note_parked(capsule, true);
    }
    HINTS.with(|hints| {
        let mut hints = hints.borrow_mut();
        hints.retain(|h| h.capsule != capsule);
        if let Some(fetched) = look.fetched.as_ref().filter(|_| !look.scripted) {
            hints.push(Hint {
                capsule,
                generation,
                queue: fetched.queue.clone(),
                more: look.queued.map_or(true, |n| n > 0),
                limited: true,
                recovered: None,
                clean_at: None,
            });
        }
    });
}

/// Changes what this thread noted for `capsule`.
fn update(capsule: u64, mut change: impl FnMut(&mut Hint)) {
    HINTS.with(|hints| {
        for hint in hints
            .borrow_mut()
            .iter_mut()
            .filter(|h| h.capsule == capsule)
        {
            change(hint);
        }
    });
}

/// Records whether a hand-over left a job in its queue.
pub(super) fn note_more(capsule: u64, more: bool) {
    update(capsule, |hint| hint.more = more);
}

/// Records what a hand-over read of its queue: whether it has a limit;
/// `recovered`; and, if it asked, whether `recoveries` was gone after that.
fn note_read(capsule: u64, limited: bool, recovered: Option<Vec<u8>>, gone: Option<bool>) {
    update(capsule, |hint| {
        hint.limited = limited;
        if gone == Some(true) {
            hint.clean_at = Some(recovered.clone());
        }
        hint.recovered = recovered.clone();
    });
}

/// Forgets what this thread noted for `capsule`.
pub(super) fn forget(capsule: u64) {
    HINTS.with(|hints| hints.borrow_mut().retain(|h| h.capsule != capsule));
}

/// A hand-over under way: the queue it takes from.
pub(super) struct HandOver {
    pub(super) queue: String,
    capsule: u64,
    /// Fetchers sleep on the doorbell: say whether more is eligible.
    report: bool,
    /// The job limits of the acknowledged job, whose slots pass too, and
    /// that job (for the script, if it decides).
    limits: Option<(Carried, Vec<u8>)>,
    /// The next job comes from the parked jobs of the one job limit.
    from_parked: bool,
    /// The queue's busy list is counted (it had a limit lately).
    count_busy: bool,
    /// The acknowledgement's `HDEL` is sent (recoveries may be counted).
    forget: bool,
}

/// What a hand-over's replies say.
pub(super) enum Outcome {
    /// The next job, taken under the finished job's slot, whether another
    /// may be eligible, and whether its queue holds another (known only
    /// while fetchers sleep).
    Taken(Vec<u8>, bool, bool),
    /// For the fetch script to decide.
    Decide(Handed),
}

impl HandOver {
    /// The hand-over a look can be: the one acknowledgement it carries is
    /// of the first queue of this fetch and carries no job limits, or
    /// continues a run of them (see the module's documentation), the queue
    /// was noted on this thread for this master, and, if fetchers sleep on
    /// the doorbell, it is the fetch's only queue (whether another queue
    /// has a job for them is the script's to say) and the last look left a
    /// job in it.
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
        if ack.queue != *first {
            return None;
        }
        let (limits, from_parked) = if carries_job_limits(&ack.job) {
            let carried = Carried::read(&ack.job)?;
            let parked = continues_run(capsule, &carried)?;
            let one = carried.limits.len() == 1;
            (Some((carried, ack.job.clone())), parked && one)
        } else {
            (None, false)
        };
        // Parked jobs are taken whether or not the queue holds any.
        let noted = HINTS.with(|hints| {
            hints
                .borrow()
                .iter()
                .find(|h| {
                    h.capsule == capsule
                        && h.generation == generation
                        && h.queue == *first
                        && (h.more || !report || from_parked)
                })
                .map(|h| (h.limited, h.clean_at.as_ref() != Some(&h.recovered)))
        });
        noted.map(|(count_busy, forget)| HandOver {
            queue: first.clone(),
            capsule,
            report,
            limits,
            from_parked,
            count_busy,
            forget,
        })
    }

    /// Where the moved job's reply is: after the `LREM`, and the `HDEL`.
    fn at_move(&self) -> usize {
        1 + usize::from(self.forget)
    }

    /// The job limits whose slots pass, if any.
    fn carried(&self) -> &[crate::carried::CarriedLimit] {
        self.limits.as_ref().map_or(&[], |(c, _)| &c.limits)
    }

    /// The pipeline, encoded.
    pub(super) fn request(&self, uuid: &str, ack: &Ack) -> Vec<u8> {
        let name = self.queue.as_str();
        let in_progress = keys::in_progress(uuid, name);
        let mut pipe = redis::pipe();
        let limits = self.carried();
        if self.names() {
            // First: until the script decides a next job that does not
            // carry them, no job in the capsule's in-progress lists may say
            // whose the passed slots are (see reap.lua). From parked jobs
            // too, each of which carries the limit: the list may be empty
            // by the move.
            let named = pipe.cmd("SADD").arg(keys::capsule_limits(uuid));
            for limit in limits {
                named.arg(&limit.id);
            }
        }
        pipe.cmd("LREM").arg(&in_progress).arg(1).arg(&ack.job);
        if self.forget {
            pipe.cmd("HDEL").arg(keys::RECOVERIES).arg(ack.digest.hex());
        }
        let source = match limits.first() {
            Some(limit) if self.from_parked => keys::parked(&limit.id),
            _ => keys::queue(name),
        };
        pipe.cmd("LMOVE")
            .arg(source)
            .arg(&in_progress)
            .arg("RIGHT")
            .arg("LEFT");
        let state = pipe
            .cmd("MGET")
            .arg(keys::limit(name))
            .arg(keys::process_limit(name))
            .arg(keys::paused(name))
            .arg(keys::rate(name))
            .arg(keys::RATE_DUE)
            .arg(keys::RECOVERED);
        for limit in limits {
            state.arg(keys::job_limit(&limit.id));
        }
        if self.count_busy {
            pipe.cmd("LLEN").arg(keys::busy(name));
        }
        if !limits.is_empty() {
            for limit in limits {
                pipe.cmd("LLEN").arg(keys::job_busy(&limit.id));
            }
            let parked = pipe.cmd("EXISTS");
            for limit in limits {
                parked.arg(keys::parked(&limit.id));
            }
        }
        if self.report {
            pipe.cmd("LLEN").arg(keys::queue(name));
        }
        if self.forget {
            pipe.cmd("EXISTS").arg(keys::RECOVERIES);
        }
        pipe.get_packed_pipeline()
    }

    /// How many replies its pipeline gets.
    pub(super) fn replies(&self) -> usize {
        self.counted() + usize::from(self.names())
    }

    /// Whether the pipeline opens with the `SADD` of the capsule's run
    /// limits: whenever job limits' slots pass.
    fn names(&self) -> bool {
        !self.carried().is_empty()
    }

    /// The replies past the first, the `SADD` of the capsule's run limits
    /// (when the job limits' slots pass): [`HandOver::counted`] of them, or
    /// `None` for anything but the pipeline's replies.
    fn read<'a>(&self, replies: &'a Value) -> Option<&'a [Value]> {
        match replies {
            Value::Array(all) if all.len() == self.replies() => {
                Some(&all[self.replies() - self.counted()..])
            }
            _ => None,
        }
    }

    /// How many of them are read: all but the first, the `SADD` of the
    /// capsule's run limits, when the job limits' slots pass.
    fn counted(&self) -> usize {
        let limits = self.carried().len();
        ALWAYS
            + 2 * usize::from(self.forget)
            + usize::from(self.count_busy)
            + if limits > 0 { limits + 1 } else { 0 }
            + usize::from(self.report)
    }

    /// The job taken, if the replies (an array of [`HandOver::replies`])
    /// say the slots passed to it and it may start; whether another may be
    /// eligible; whether the queue holds another.
    pub(super) fn taken(&self, replies: &Value) -> Option<(Vec<u8>, bool, bool)> {
        let replies = self.read(replies)?;
        let (Value::Int(1), replies) = (&replies[0], &replies[self.at_move()..]) else {
            return None;
        };
        // The last reply, with the HDEL, is the EXISTS of recoveries.
        let replies = &replies[..replies.len() - usize::from(self.forget)];
        let [Value::BulkString(job), Value::Array(state), rest @ ..] = replies else {
            return None;
        };
        let [limit, Value::Nil, Value::Nil, Value::Nil, rate_due, _, stored @ ..] =
            state.as_slice()
        else {
            return None;
        };
        let limits = self.carried();
        if stored.len() != limits.len() || rate_release_due(rate_due) {
            return None;
        }
        let limit = stored_limit(limit)?;
        // Uncounted, a limit set since sends the job to the script.
        let (busy, rest) = match (self.count_busy, rest) {
            (true, [Value::Int(busy), rest @ ..]) => (count(*busy), rest),
            (false, rest) if limit.is_none() => (0, rest),
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
        let (counts, rest) = rest.split_at(if limits.is_empty() {
            0
        } else {
            limits.len() + 1
        });
        if let [busy @ .., Value::Int(parked)] = counts {
            // From the queue, a job would overtake the parked ones.
            if *parked > 0 && !self.from_parked {
                return None;
            }
            for ((carried, stored), busy) in limits.iter().zip(stored).zip(busy) {
                let Value::Int(busy) = busy else {
                    return None;
                };
                let limit = stored_limit(stored)?.unwrap_or(carried.concurrency);
                if count(*busy) > limit {
                    return None;
                }
            }
        }
        let (more, queued) = match rest {
            [Value::Int(queued)] => (
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
        let at = self.at_move();
        if let Value::Array(state) = &replies[at + 1] {
            let recovered = match state.get(5) {
                Some(Value::BulkString(raw)) => Some(raw.clone()),
                _ => None,
            };
            let gone = match (self.forget, replies.last()) {
                (true, Some(Value::Int(n))) => Some(*n == 0),
                _ => None,
            };
            let limited = !matches!(state.first(), Some(Value::Nil));
            note_read(self.capsule, limited, recovered, gone);
        }
        let n = self.carried().len();
        let parked = at + 2 + usize::from(self.count_busy) + n;
        if let (true, Some(Value::Int(parked))) = (n > 0, replies.get(parked)) {
            note_parked(self.capsule, *parked > 0);
        }
    }

    /// What the replies say. Replies that do not say the acknowledgement
    /// freed the slot hand in none: a busy entry left over lowers the limit
    /// until the capsule next reconciles, where a slot freed twice would let
    /// one job too many run.
    pub(super) fn outcome(&self, replies: Value) -> Outcome {
        self.note_found(&replies);
        if let Some((job, more, queued)) = self.taken(&replies) {
            return Outcome::Taken(job, more, queued);
        }
        let (slot, job) = match self.read(&replies) {
            Some(r) => (
                matches!(r[0], Value::Int(1)),
                match &r[self.at_move()] {
                    Value::BulkString(job) => Some(job.clone()),
                    _ => None,
                },
            ),
            _ => (false, None),
        };
        let parked = match self.carried() {
            [limit] if self.from_parked => Some(limit.id.clone()),
            _ => None,
        };
        Outcome::Decide(Handed {
            queue: self.queue.clone(),
            slot,
            job,
            acked: self.limits.as_ref().map(|(_, job)| job.clone()),
            parked,
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
