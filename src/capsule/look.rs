//! One run of the fetch script for a fetch, a *look*: on the calling
//! thread's own connection when it has one (direct_look.rs), else as a task
//! on the runtime's connection, which also opens the thread's own for next
//! time; and the run that arms the doorbell.

use std::sync::Arc;

use super::direct_look::DirectLook;
use super::{Capsule, Inner};
use crate::ledger::Ack;
use crate::runtime::{spawn, Pending};
use crate::script::fetch::{Look, Mode};
use crate::{Error, Interrupt, Result};

/// The most a script's request may take to reach Redis and start (see
/// `Capsule::ring_as_rates_open`).
const REQUEST_SLACK: std::time::Duration = std::time::Duration::from_millis(1);

/// The moment a reply taken at `now` counts its "opens in" from: its
/// request's sending (if known) plus [`REQUEST_SLACK`], where that is
/// earlier.
pub(super) fn counted_from(
    now: std::time::Instant,
    sent: Option<std::time::Instant>,
) -> std::time::Instant {
    sent.map_or(now, |sent| now.min(sent + REQUEST_SLACK))
}

/// A look under way: on the runtime's connection, or on the thread's own.
pub(crate) enum LookPending {
    Task(Pending<Look>),
    Direct(DirectLook),
}

impl LookPending {
    pub(crate) fn wait(&mut self, interrupt: &Interrupt) -> Result<Look> {
        match self {
            LookPending::Task(pending) => pending.wait(interrupt),
            LookPending::Direct(direct) => match direct.finish(interrupt) {
                // A connection found broken (a Redis restart) before any
                // reply: the look goes again through the runtime's
                // connection, which reconnects.
                Err(Error::Connection(_)) if direct.lost => {
                    *self =
                        LookPending::Task(start_task_look(&direct.inner, &direct.queues, false)?);
                    self.wait(interrupt)
                }
                other => other,
            },
        }
    }

    /// The reply is here and is a look's: waiting for it will not block.
    pub(crate) fn is_ready(&self) -> bool {
        matches!(self, LookPending::Direct(direct) if direct.is_ready())
    }
}

impl Capsule {
    /// One run of the fetch script; `watch`: a fetcher sleeps on the
    /// doorbell (see lua/fetch/). On the thread's own connection if it has
    /// one: its writes ring the doorbell through Redis, and only those that
    /// change what a sleeping fetcher may take (an acknowledgement whose slot
    /// the same fetch takes again writes no busy list).
    pub(crate) fn start_look(&self, queues: &Arc<Vec<String>>, watch: bool) -> Result<LookPending> {
        if let Some(direct) = DirectLook::start(&self.inner, queues, watch) {
            return Ok(LookPending::Direct(direct));
        }
        start_task_look(&self.inner, queues, watch).map(LookPending::Task)
    }

    /// Opens the calling thread's own connection if it has none: a look
    /// goes there once it is open. A fetcher opens it as its first look's
    /// reply comes, or before it first sleeps on the doorbell: its first
    /// look after a ring then goes there too, not through the tracking
    /// connection, where all that look read would be tracked (a rate's
    /// bookkeeping too, which every window's opening writes: each would
    /// ring every sleeping fetcher).
    pub(crate) fn open_direct(&self, interrupt: &Interrupt) {
        let inner = &self.inner;
        crate::direct::open(inner.id, &inner.redis, &inner.settings, interrupt);
    }

    /// Sets the doorbell to ring when a rate may let go what `look` found
    /// it holding back: nothing else would wake a fetcher then.
    ///
    /// "Opens in" counts from when the script ran: soon after its request
    /// went, while its reply may be taken much later (a thread run late, on
    /// a loaded machine), which would ring late. From the request's sending
    /// then, plus [`REQUEST_SLACK`] for its way there, where that is
    /// earlier: a ring early by more, which looks before the window opens,
    /// learns the rest and rings again.
    pub(crate) fn ring_as_rates_open(&self, look: &Look) {
        if let Some(after) = look.opens_in {
            let from = counted_from(std::time::Instant::now(), look.sent);
            self.inner.doorbell.ring_at(from + after, look.opens_at);
        }
    }

    /// Arms the doorbell for `queues` (see `Doorbell::arm`): turns tracking
    /// on and runs the fetch script in its `Arm` mode, which reads, after
    /// `CLIENT CACHING yes`, every key what the queues offer depends on.
    /// Returns whether it armed quietly (nothing rang meanwhile), and whether
    /// one of the queues held a job it may take. A rate that holds one back
    /// sets the bell to ring as it may go.
    pub(crate) async fn arm(&self, queues: &[String]) -> Result<(bool, bool)> {
        let inner = &self.inner;
        inner
            .doorbell
            .arm(queues, |all| async move {
                let run = inner
                    .fetch
                    .call(&inner.redis, &inner.uuid, Mode::Arm, &[], None, &all);
                let look = run.await?;
                self.ring_as_rates_open(&look);
                Ok(look.more)
            })
            .await
    }
}

/// A look as a task on the runtime's connection.
fn start_task_look(
    inner: &Arc<Inner>,
    queues: &Arc<Vec<String>>,
    watch: bool,
) -> Result<Pending<Look>> {
    let queues = queues.clone();
    let task_inner = inner.clone();
    let undo_inner = inner.clone();
    // Taken now rather than when the task runs: until the I/O thread got
    // to it, a flush firing meanwhile would send them on their own.
    let acks = inner.ledger().take_acks(Some(std::thread::current().id()));
    let mode = Mode::of_look(watch, false);
    spawn(
        inner.timeout,
        async move { task_inner.look(&queues, mode, acks).await },
        |abandoned: Look| async move {
            if let Some(f) = abandoned.fetched {
                let _ = undo_inner.requeue(vec![(f.queue, f.job)]).await;
            }
        },
    )
}

impl Inner {
    /// The fetch script on the tracking connection, carrying `acks` (taken
    /// from the ledger; they go back if the script fails).
    ///
    /// The acknowledgements may be taken before the gate: the ledger counts
    /// their jobs as held until Redis has them, as Redis does, so a
    /// reconciliation in between finds the two in step.
    pub(super) async fn look(&self, queues: &[String], mode: Mode, acks: Vec<Ack>) -> Result<Look> {
        // On a master the capsule is not healed on yet, it waits for that.
        if let Err(err) = self.heal().await {
            return self.settle(acks, Err(err));
        }
        self.look_here(queues, mode, acks).await
    }

    /// [`Inner::look`] on whatever master is followed now: the healing's
    /// own flush.
    pub(super) async fn look_here(
        &self,
        queues: &[String],
        mode: Mode,
        acks: Vec<Ack>,
    ) -> Result<Look> {
        let _shared = self.gate.read().await;
        let generation = self.redis.generation();
        let mut reply = self
            .fetch
            .call(&self.redis, &self.uuid, mode, &acks, None, queues)
            .await;
        // Behind sentinels, the master moved under it: once more, on the
        // master they name now (as a direct look whose connection broke goes
        // again), rather than the caller's waiting a second for its next.
        // The new connection tracks nothing yet: no read-back.
        if reply.is_err() && self.redis.generation() != generation && mode != Mode::Arm {
            let mode = if mode == Mode::Watch {
                Mode::Report
            } else {
                mode
            };
            reply = self
                .fetch
                .call(&self.redis, &self.uuid, mode, &acks, None, queues)
                .await;
        }
        self.settle(acks, reply)
    }
}

#[cfg(test)]
mod tests {
    use super::{counted_from, REQUEST_SLACK};
    use std::time::{Duration, Instant};

    /// A reply taken long after its request counts from the request (and
    /// its way there), not from when it was taken; one taken at once, from
    /// when it was taken; one of unknown sending, likewise.
    #[test]
    fn opens_in_counts_from_the_request_not_a_late_reply() {
        let sent = Instant::now();
        let late = sent + Duration::from_millis(60);
        assert_eq!(counted_from(late, Some(sent)), sent + REQUEST_SLACK);
        let soon = sent + Duration::from_micros(300);
        assert_eq!(counted_from(soon, Some(sent)), soon);
        assert_eq!(counted_from(late, None), late);
    }
}
