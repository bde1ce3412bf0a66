//! What a thread remembers between its fetches, per capsule: the queue its
//! last look took a job of (a hint that a hand-over there should succeed),
//! and the job limits of the last job it acknowledged (a run, whose slots
//! pass too). Thread-local: a hand-over goes on its thread's own
//! connection, after that thread's own last look.

use std::cell::RefCell;

use crate::carried::Carried;
use crate::script::fetch::Look;

/// The queue a fetch script last took a job of on this thread, for a
/// capsule, on a master, if that queue had no process limit, rate or adaptive
/// limit, and the job's rate, if any, let a lease be asked (see the
/// module's documentation, and lease.rs); and whether
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
    /// `recovered` as the last hand-over read it (unknown after a script).
    recovered: Option<Vec<u8>>,
    /// Whether the acknowledgement's recovery count may need clearing.
    recoveries: Recoveries,
}

/// What a hand-over last learnt of the recoveries hash: while it is gone
/// and no reap counted a recovery since (`recovered` unchanged), there is
/// no count to clear and the `HDEL` is left out.
enum Recoveries {
    /// Not found gone since the hint was noted: counts may be there.
    MayBeCounted,
    /// Found gone when `recovered` read this.
    GoneAt(Option<Vec<u8>>),
}

/// The job limits of the last job this thread acknowledged for a capsule,
/// and whether the last hand-over of them found parked jobs left.
struct Run {
    capsule: u64,
    head: Vec<u8>,
    parked_left: bool,
}

impl Hint {
    /// The recoveries hash was gone when `recovered` last read as it does
    /// now: no recovery counted since.
    fn recoveries_gone(&self) -> bool {
        matches!(&self.recoveries, Recoveries::GoneAt(at) if *at == self.recovered)
    }
}

thread_local! {
    static HINTS: RefCell<Vec<Hint>> = const { RefCell::new(Vec::new()) };
    static RUNS: RefCell<Vec<Run>> = const { RefCell::new(Vec::new()) };
}

/// What this thread noted of `queue` for a hand-over: whether its busy list
/// is counted (it had a limit lately) and whether the acknowledgement's
/// `HDEL` is sent (recoveries may be counted); `None` if the queue is not
/// the one noted for `capsule` on the master of `generation`, or if
/// `needs_more` and the last look left no job in it.
pub(super) fn noted(
    capsule: u64,
    generation: u64,
    queue: &str,
    needs_more: bool,
) -> Option<(bool, bool)> {
    HINTS.with(|hints| {
        hints
            .borrow()
            .iter()
            .find(|h| {
                h.capsule == capsule
                    && h.generation == generation
                    && h.queue == queue
                    && (h.more || !needs_more)
            })
            .map(|h| (h.limited, !h.recoveries_gone()))
    })
}

/// Whether `carried` continues a run: the job this thread acknowledged
/// before for `capsule` carried the same. Then `Some` of whether parked
/// jobs were left; else `None`, and `carried` starts a run.
pub(super) fn continues_run(capsule: u64, carried: &Carried) -> Option<bool> {
    RUNS.with(|runs| {
        let mut runs = runs.borrow_mut();
        match runs.iter_mut().find(|r| r.capsule == capsule) {
            Some(run) if run.head == carried.head => Some(run.parked_left),
            Some(run) => {
                run.head.clone_from(&carried.head);
                run.parked_left = false;
                None
            }
            None => {
                runs.push(Run {
                    capsule,
                    head: carried.head.clone(),
                    parked_left: false,
                });
                None
            }
        }
    })
}

/// Notes whether the run of `capsule` has parked jobs left.
pub(super) fn note_parked_left(capsule: u64, parked_left: bool) {
    RUNS.with(|runs| {
        if let Some(run) = runs.borrow_mut().iter_mut().find(|r| r.capsule == capsule) {
            run.parked_left = parked_left;
        }
    });
}

/// Records what a fetch script on this thread's connection found.
pub(in crate::capsule) fn note(capsule: u64, generation: u64, look: &Look) {
    if look.was_parked {
        note_parked_left(capsule, true);
    }
    super::hold::note_look(capsule, look.opens_in.is_some());
    HINTS.with(|hints| {
        let mut hints = hints.borrow_mut();
        hints.retain(|h| h.capsule != capsule);
        if let Some(fetched) = look.fetched.as_ref().filter(|_| !look.left_to_script) {
            hints.push(Hint {
                capsule,
                generation,
                queue: fetched.queue.clone(),
                more: look.queued.map_or(true, |n| n > 0),
                limited: true,
                recovered: None,
                recoveries: Recoveries::MayBeCounted,
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
pub(in crate::capsule) fn note_more(capsule: u64, more: bool) {
    update(capsule, |hint| hint.more = more);
}

/// Records what a hand-over read of its queue: whether it has a limit;
/// `recovered`; and, if it asked, whether `recoveries` was gone after that.
pub(super) fn note_read(
    capsule: u64,
    limited: bool,
    recovered: Option<Vec<u8>>,
    gone: Option<bool>,
) {
    update(capsule, |hint| {
        hint.limited = limited;
        if gone == Some(true) {
            hint.recoveries = Recoveries::GoneAt(recovered.clone());
        }
        hint.recovered = recovered.clone();
    });
}

/// Forgets what this thread noted for `capsule`.
pub(in crate::capsule) fn forget(capsule: u64) {
    HINTS.with(|hints| hints.borrow_mut().retain(|h| h.capsule != capsule));
}
