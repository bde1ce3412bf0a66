//! What a capsule owes Redis: acknowledgements riding on the next fetch (or
//! a flush shortly after), jobs pushed back, and the ledger kept in step
//! with what each fetch script did.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Capsule, Inner};
use crate::ledger::{Ack, Digest};
use crate::runtime::wait_for;
use crate::script::fetch::{Fetched, Look, Mode};
use crate::{keys, Interrupt, Result};

/// After a failed flush, the next attempt (unless a fetch carries it first).
const ACK_RETRY: Duration = Duration::from_secs(1);

impl Capsule {
    /// Marks a fetched job of `queue` finished. Returns at once: the removal
    /// from its in-progress list and the release of its slot ride on the
    /// capsule's next fetch, or go on their own once its `ack_grace` has
    /// passed (2 ms: a processor fetches again right after it acknowledges,
    /// so on a busy capsule they ride along for free, and the slot is held
    /// about this much longer at most; each acknowledgement gets its own, so
    /// that one made just before another's flush still rides). Until Redis has them, the slot counts as busy (never
    /// the other way round).
    pub fn acknowledge(&self, queue: &str, job: Vec<u8>) {
        let queue = keys::queue_name(queue).to_owned();
        let digest = Digest::of(&job);
        let schedule = {
            let mut ledger = self.inner.ledger();
            ledger.acks.push(Ack {
                queue,
                job,
                digest,
                thread: std::thread::current().id(),
                at: Instant::now(),
            });
            !std::mem::replace(&mut ledger.flush_scheduled, true)
        };
        if schedule {
            let grace = self.inner.ack_grace;
            self.inner.clone().schedule_flush(grace);
        }
    }

    /// True while acknowledgements wait for a fetch to carry them.
    pub(crate) fn owes_acks(&self) -> bool {
        self.inner.ledger().owes(std::thread::current().id())
    }

    /// Sends pending acknowledgements now.
    pub fn flush(&self, interrupt: &Interrupt) -> Result<()> {
        let inner = self.inner.clone();
        wait_for(
            interrupt,
            self.inner.timeout,
            async move { inner.flush().await },
        )
    }

    /// Puts unfinished jobs back at the front of their queues and frees
    /// their slots, in one atomic step. `jobs` are (queue name, payload).
    pub fn requeue(&self, jobs: Vec<(String, Vec<u8>)>, interrupt: &Interrupt) -> Result<()> {
        let inner = self.inner.clone();
        wait_for(interrupt, self.inner.timeout, async move {
            inner.requeue(jobs).await
        })
    }

    /// Puts a fetched job back at the front of its queue and frees its slot,
    /// without waiting: for a caller that must drop a job it already holds
    /// (its thread is being killed).
    pub fn give_back(&self, fetched: Fetched) {
        let inner = self.inner.clone();
        if let Ok(handle) = crate::runtime::handle() {
            crate::runtime::detach(&handle, async move {
                let _ = inner.requeue(vec![(fetched.queue, fetched.job)]).await;
            });
        }
    }
}

impl Inner {
    /// Books what a fetch script did in the ledger.
    pub(super) fn settle(&self, acks: Vec<Ack>, reply: Result<Look>) -> Result<Look> {
        let mut ledger = self.ledger();
        match &reply {
            Ok(look) => {
                for ack in acks {
                    ledger.forget(&ack.queue, &ack.digest);
                    ledger.finished(&ack.queue, ack.digest);
                }
                if let Some(f) = &look.fetched {
                    ledger.hold(&f.queue, &f.job);
                }
                if !look.discarded.is_empty() {
                    self.discarded.lock().extend(look.discarded.iter().cloned());
                }
            }
            // Sent again later: acknowledging is idempotent.
            Err(_) => ledger.acks.splice(0..0, acks).for_each(drop),
        }
        reply
    }

    /// Sends pending acknowledgements on their own (no fetch carried them).
    pub(super) async fn flush(&self) -> Result<()> {
        if self.ledger().acks.is_empty() {
            return Ok(());
        }
        // Freed slots no fetch of this capsule took: a waiter may (see `look_here`).
        let acks = self.ledger().take_acks(None);
        self.look_here(&[], Mode::Plain, acks).await.map(drop)
    }

    fn schedule_flush(self: Arc<Self>, after: Duration) {
        let Ok(handle) = crate::runtime::handle() else {
            return;
        };
        crate::runtime::detach(&handle, async move {
            tokio::time::sleep(after).await;
            // Only those the grace has passed: a younger one is its thread's
            // next fetch's to carry (see `Ledger::take_aged`).
            let (acks, next) = {
                let mut ledger = self.ledger();
                let (acks, next) = ledger.take_aged(Instant::now(), self.ack_grace);
                ledger.flush_scheduled = next.is_some();
                (acks, next)
            };
            if let Some(next) = next {
                let after = next.saturating_duration_since(Instant::now());
                self.clone().schedule_flush(after);
            }
            if acks.is_empty() {
                return;
            }
            // Freed slots no fetch of this capsule took: a waiter may (see `look_here`).
            if self.look_here(&[], Mode::Plain, acks).await.is_err() {
                let retry = {
                    let mut ledger = self.ledger();
                    !ledger.acks.is_empty() && !std::mem::replace(&mut ledger.flush_scheduled, true)
                };
                if retry {
                    self.schedule_flush(ACK_RETRY);
                }
            }
        });
    }

    pub(super) async fn requeue(&self, jobs: Vec<(String, Vec<u8>)>) -> Result<()> {
        if jobs.is_empty() {
            return Ok(());
        }
        let _shared = self.gate.read().await;
        let mut args: Vec<&[u8]> = Vec::with_capacity(1 + jobs.len() * 2);
        args.push(self.uuid.as_bytes());
        for (queue, job) in &jobs {
            args.push(queue.as_bytes());
            args.push(job);
        }
        let sent = async {
            let mut conn = self.redis.writer().await?;
            self.requeue
                .invoke::<(), _, _>(&mut conn, &[] as &[&str], &args[..])
                .await
        }
        .await;
        // Whether or not Redis heard it, the jobs are no longer ours; what did
        // not land is caught by the next reconciliation.
        let mut ledger = self.ledger();
        for (queue, job) in &jobs {
            ledger.forget(queue, &Digest::of(job));
        }
        sent
    }
}
