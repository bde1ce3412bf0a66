//! The hand-over: a processor that finished a job and fetches again with
//! that job's queue first takes the queue's next job under the finished
//! job's slot, without the fetch script. One pipeline on its own connection:
//!
//! ```text
//! WATCH  heartbeat                     with a deferred acknowledgement
//!                                      (a keyed hand-over's, below)
//! SADD   capsule-limits <ids>          with job limits whose slots pass:
//!                                      the capsule's run limits (below)
//! LREM   in-progress 1 <finished job>  the acknowledgement
//! HDEL   recoveries <its digest>       as the script's acknowledgement
//!                                      does, unless recoveries are known gone
//! FCALL  lease <id> <rate> k           a run's rated limit with no start
//!                                      held: starts leased (lease.rs)
//! LMOVE  queue in-progress RIGHT LEFT  the next job, under the same slot
//!                                      (from a job limit's parked list
//!                                      instead of the queue: below)
//! MGET   limit process_limit paused    the queue's state after the move,
//!        rate rate_due recovered       its rate, when parked rates are due,
//!        class_back_off fair_limit     the count of reaps that recovered
//!        job-limit job-back-off...     jobs, whether classes back off in
//!        [released]                    it, its fair limit (a fair queue),
//!                                      each job limit's stored value and
//!                                      back-off, a rated limit's jobs sent
//!                                      back for its rate, not started,
//! LLEN   busy                          the queue's count (the slot
//!                                      included), while it has a limit,
//! LLEN   job-busy  (one a job limit)   each job limit's count,
//! EXISTS parked...  (all job limits)   whether any of them has parked jobs,
//! LLEN   queue                         while fetchers sleep on the doorbell:
//!                                      whether another job may be eligible,
//!                                      to wake one (the script's `more`),
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
//! A job that carries job limits (a class's, a key's) passes their slots
//! too, to a next job that carries the same ([`Carried::head`]: the same
//! limits and queue), where the last two jobs this thread finished carried
//! the same (a run of them: a class's jobs, a hot key's). The pipeline then
//! also reads each limit's stored value (in the `MGET`) and count
//! (`LLEN`), and whether it has parked jobs (one `EXISTS`), which go first:
//! once a hand-over from the queue finds some, the next ones take them,
//! oldest first, from the limit's parked list instead of the queue (a
//! job of one limit only, without a rate: a job parked by one of several
//! limits may be behind the parked jobs of another, and a rate's are the
//! script's), without the `EXISTS`, until a move
//! finds the list empty (the script then decides). It opens with an `SADD` of their
//! ids to the capsule's set of run limits: a job limit's slot is otherwise
//! found, if the capsule dies, by the job that holds it, in an in-progress
//! list (reap.lua), and the job this pipeline moves may carry other limits.
//! The script that ends the run takes them out once the capsule holds no
//! slot of them.
//!
//! A keyed hand-over, in two round trips (keyed.rs), takes a next job whose
//! job limits are not a run's: where the finished job's limits differ from
//! the job's before it (a key of its own per job), or the finished job
//! carries none and the moved one does. The first round trip is the
//! pipeline above without job limits, and without the acknowledgement when
//! the finished job carries limits: its job stays in the in-progress list,
//! where a reaper finds its slots, until the second round trip frees them
//! (an `LREM` of each busy list) and then acknowledges it; the `MGET` then
//! reads the capsule's heartbeat key too, without which (a reaper may have
//! freed the slots) the script acknowledges instead. The key is `WATCH`ed
//! before that read, and the second round trip's writes are then a
//! transaction (`MULTI` ... `EXEC`) that Redis runs only if nothing
//! wrote, deleted or expired it since: a reaper that took the capsule
//! between the round trips freed every entry of it, and an `LREM` (which
//! removes an entry of the capsule, not of a job) would free a slot that
//! another of its processors, woken, booked since; not run, the script
//! decides as of the first round trip (keyed.rs). A watch left by a first round trip whose
//! second is not sent lasts until the connection's next `EXEC`, which it
//! aborts for nothing if a beat wrote the key since. The moved job's
//! head read ([`Carried`]: a concurrency, no share or range; a rate sends
//! it to the script, which counts its start), the
//! second books each of its limits as the script does, an `RPUSH` of the
//! capsule on its busy list, whose reply is the count with it, and reads
//! each one's stored value and back-off and whether any limit named there
//! has parked jobs. A job whose limits [`Carried`] does not read, or a run's
//! next job, is left to the script after the first round trip. It names
//! nothing in the capsule's set of run limits: every slot it books or frees
//! belongs to a job in the in-progress list as it does (the moved job, moved
//! by the first round trip; the finished one, acknowledged after its slots
//! are freed), where a reap finds it; and the finished job's slots were
//! booked with it in the list (by the script or a keyed hand-over: a job
//! that took a run's passed slot is acknowledged by the run's next
//! hand-over, as the run goes on).
//!
//! A parked job of the moved job's limit sent back to its queue between
//! the round trips (a slot freed elsewhere) is not seen by the second's
//! `EXISTS`, and the moved job starts first, where the script would have
//! parked it behind: order only (each is counted by its limit when it
//! starts), by one job a hand-over.
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
//! limit the job carries; a run's one rated limit, if any, with a start
//! leased to this thread and still within its span when the reply came
//! (lease.rs: why no window then holds more than the rate's limit). Then
//! it starts within the limit: since the read, every other capsule booked
//! a slot only below it. A keyed hand-over books first and checks after:
//! its job is handed to Sidekiq only if, after its own push, each limit's
//! busy list counts no more than the limit (stored, else declared), none
//! backs off, none has parked jobs (which its job would overtake, or which
//! the freed slots must send); and the acknowledgement found its job. A
//! busy list's length counts every entry in it, those of jobs that run and
//! those still to be undone; every booking is admitted only where that
//! length, with it, is at most the limit (the script's: counted before
//! its push, in one step; a keyed hand-over's: the push's reply). So, as
//! before, the jobs admitted never outnumber the limit: an optimistic
//! push followed by a count within the limit is a valid booking; a count
//! over it sends the job to the script, which counts the entry as a slot
//! freed (as an acknowledgement's), parks or takes the job as a fetch
//! would, and removes the entry at its end if the job did not take it,
//! sending a parked job if that leaves room (a fetch in between may have
//! parked one behind it). Anything else (a pause, a process limit, a queue
//! over a lowered limit, an empty queue, a finished job no longer in the
//! in-progress list because it was reaped, a new job carrying job limits,
//! an error reply, a job limit's parked jobs the job would overtake) is left
//! to the fetch script on the same connection, which decides the moved job
//! as a fetch would, and frees the job limits' slots the acknowledged job
//! passed, sending their parked jobs first (lua/fetch/state.lua's ARGV[5..10]).
//!
//! Jobs parked behind a rate go back only with a script (lua/fetch/rates.lua's
//! `release_opened`): a hand-over leaves it to the script once their window
//! opens within `RATE_DUE_SOON` (verdict.rs) by this host's clock (the
//! margin stands for the clocks' difference), so that a thread handing over
//! one job after another cannot keep them parked.
//!
//! A hand-over is tried only where it should succeed: for a queue a script
//! on this thread last took a job of, without a process limit or a rate
//! then ([`note`]), nor a job whose rate is near its limit or holds jobs
//! back (lease.rs); a queue with either pays the script alone, not both. So
//! does a queue with an adaptive limit, which grows where the script finds
//! it reached (lua/prelude/adaptive.lua): a hand-over, which reads its
//! limit as stored (the floor), only ever sends a job over the floor to
//! the script, and never grows it. A fair queue's jobs carry their share,
//! which the script writes into them (lua/fetch/fair_queue.lua) and no
//! hand-over carries ([`Carried`]): none follows one; a queue made fair
//! since a hand-over's thread took a job of it without its share is sent
//! to the script by the fair limit read in the `MGET`. While
//! fetchers sleep (the queue ran dry lately), only if the last look said
//! another job was there: a hand-over that finds the queue empty costs a
//! round trip more than the script.
//!
//! A capsule taken for dead (frozen, or cut off past its heartbeat's
//! expiry) between a hand-over and the script that decides after it had its
//! slots freed by the reaper, the passed one included: the script frees
//! the passed slot only while the capsule's heartbeat key exists (a reaper
//! takes only capsules without one), and a moved job found gone frees
//! nothing (lua/fetch/adopt.lua). A capsule that beat again in between, and
//! so frees the slot a second time, reconciles its slots as soon as the
//! script is done: every beat does, and the beat waits for the look.
//!
//! Here, the decision ([`HandOver::of`]); in `memory.rs`, what the thread
//! noted between fetches (hints, runs); in `pipeline.rs`, the commands
//! above and where each reply is ([`Layout`]); in `verdict.rs`, what the
//! replies say ([`Outcome`]), read as `values.rs` reads a value; in
//! `keyed.rs`, a keyed hand-over's second round trip and what it says.

mod hold;
mod keyed;
mod lease;
mod memory;
mod pipeline;
mod values;
mod verdict;

pub(super) use lease::abandon;
pub(super) use memory::{forget, note, note_more};
pub(super) use verdict::Outcome;

use std::cell::Cell;

use crate::carried::{Carried, CarriedLimit};
use crate::ledger::Ack;
use crate::script::fetch::{carries_job_limits, Mode};
use keyed::Keyed;
use lease::Spend;
use memory::{continues_run, noted};
use pipeline::{Layout, Sends};

/// A hand-over under way.
pub(super) struct HandOver {
    /// The queue it takes from.
    queue: String,
    capsule: u64,
    uuid: String,
    /// The job limits of the acknowledged job, whose slots pass too, and
    /// that job (for the script, if it decides).
    limits: Option<(Carried, Vec<u8>)>,
    /// The job limits of the acknowledged job, when they differ from a
    /// run's, and that job: its acknowledgement waits for the second round
    /// trip, which frees their slots (keyed.rs).
    deferred: Option<(Carried, Vec<u8>)>,
    /// The second round trip, once built.
    keyed: Option<Box<Keyed>>,
    /// The next job comes from the parked jobs of the one job limit.
    from_parked_list: bool,
    /// The start a run's rated limit spends (lease.rs), and whether its
    /// reply found one held, once asked (the answer stands).
    lease: Option<Spend>,
    covered: Cell<Option<bool>>,
    /// Where its pipeline's replies are.
    layout: Layout,
}

impl HandOver {
    /// The hand-over a look can be, and its pipeline, encoded: the one
    /// acknowledgement it carries is of the first queue of this fetch and
    /// carries no job limits, or continues a run of them (see the module's
    /// documentation), the queue was noted on this thread for this master,
    /// and, if fetchers sleep on the doorbell, it is the fetch's only queue
    /// (whether another queue has a job for them is the script's to say)
    /// and the last look left a job in it.
    pub(super) fn of(
        capsule: u64,
        generation: u64,
        uuid: &str,
        mode: Mode,
        acks: &[Ack],
        queues: &[String],
    ) -> Option<(HandOver, Vec<u8>)> {
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
        let (limits, deferred, from_parked_list) = if carries_job_limits(&ack.job) {
            let carried = Carried::read(&ack.job)?;
            let rated = carried.limits.iter().any(|l| l.rate.is_some());
            match continues_run(capsule, &carried) {
                // A rated limit's parked jobs are the script's (lease.rs).
                Some(parked_left) => {
                    let one = carried.limits.len() == 1 && !rated;
                    (Some((carried, ack.job.clone())), None, parked_left && one)
                }
                // A rated run starts with the script, as a rated job does.
                None if rated => return None,
                None => (None, Some((carried, ack.job.clone())), false),
            }
        } else {
            (None, None, false)
        };
        let carried = limits.as_ref().map_or(&[][..], |(c, _)| &c.limits[..]);
        let lease = Spend::of(capsule, carried)?;
        // Parked jobs are taken whether or not the queue holds any.
        let (count_busy, recoveries_counted) =
            noted(capsule, generation, first, report && !from_parked_list)?;
        let sends = Sends {
            from_parked_list,
            count_busy,
            recoveries_counted,
            report,
            defer_ack: deferred.is_some(),
            grant: lease.as_ref().and_then(|l| l.call(uuid)),
            released: lease.as_ref().map(|l| l.limit.id.clone()),
            bare_rate: lease::bare(carried),
        };
        let (request, layout) = pipeline::build(first, uuid, ack, carried, &sends);
        let hand_over = HandOver {
            queue: first.clone(),
            capsule,
            uuid: uuid.to_owned(),
            limits,
            deferred,
            keyed: None,
            from_parked_list,
            lease,
            covered: Cell::new(None),
            layout,
        };
        Some((hand_over, request))
    }

    /// How many replies its pipeline gets (its second's, once built).
    pub(in crate::capsule) fn replies(&self) -> usize {
        match &self.keyed {
            Some(keyed) => keyed.replies(),
            None => self.layout.replies,
        }
    }

    /// The job limits whose slots pass, if any.
    fn carried(&self) -> &[CarriedLimit] {
        self.limits.as_ref().map_or(&[], |(c, _)| &c.limits)
    }
}
