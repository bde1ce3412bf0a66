//! What a capsule knows it holds: the jobs it fetched and has not yet
//! acknowledged in Redis, the acknowledgements still to be sent, and those
//! Redis took lately (which a failover may lose).

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::Arc;
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use crate::block::Block;

/// SHA1 of a job's payload: how the ledger and the Lua scripts (which have
/// `redis.sha1hex`) recognise a job without keeping or sending its payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Digest([u8; 20]);

impl Digest {
    pub(crate) fn of(job: &[u8]) -> Self {
        Self(sha1_smol::Sha1::from(job).digest().bytes())
    }

    pub(crate) fn hex(&self) -> String {
        hex(&self.0)
    }

    fn prefix(&self) -> Prefix {
        let mut prefix = [0; PREFIX_BYTES];
        prefix.copy_from_slice(&self.0[..PREFIX_BYTES]);
        Prefix(prefix)
    }
}

/// The bytes of a digest the ledger keeps of a job Redis took lately: 96
/// bits tell 16,384 such jobs from the few a reconciliation looks at (a
/// match by chance about once in 2^96 / 16,384^2 reconciliations), in two
/// thirds of the memory. reconcile.lua compares as many hex digits.
const PREFIX_BYTES: usize = 12;

/// The first [`PREFIX_BYTES`] of a [`Digest`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Prefix([u8; PREFIX_BYTES]);

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut hex = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        hex.push(DIGITS[usize::from(byte >> 4)].into());
        hex.push(DIGITS[usize::from(byte & 15)].into());
    }
    hex
}

/// A finished job whose removal from its in-progress list is still to be
/// sent: it rides on the capsule's next fetch, or a flush shortly after.
pub(crate) struct Ack {
    pub(crate) queue: String,
    pub(crate) job: Vec<u8>,
    pub(crate) digest: Digest,
    /// The thread that acknowledged: in Sidekiq, the one that fetches next.
    pub(crate) thread: ThreadId,
    /// When: a flush takes it only once its grace has passed.
    pub(crate) at: Instant,
}

/// A job the capsule holds. Its payload is kept (as Sidekiq keeps the
/// payloads of its running jobs in its heartbeat): a capsule reaped while
/// alive books its running jobs again from it (reconcile.lua).
struct Held {
    digest: Digest,
    job: Vec<u8>,
}

/// How long the acknowledgements Redis took are remembered, and how many at
/// most: a failover loses the writes of the last moments before it (a
/// fraction of a second to a few with asynchronous replication), and the
/// reconciliation that follows it must not run those jobs again. A capsule
/// that finishes more than FINISHED_MAX jobs in FINISHED_FOR keeps
/// FINISHED_MAX of them all its life, so each entry is small (see
/// [`Finished`]).
const FINISHED_FOR: Duration = Duration::from_secs(30);
const FINISHED_MAX: usize = 16_384;

type Entry = (u32, Prefix);

/// The acknowledgements Redis took lately, oldest first, in 16 bytes each:
/// when, in whole seconds since the first (so an entry is dropped 30 to 32 s
/// after, never earlier), and the first bytes of the job's digest
/// ([`Prefix`]). They are kept in blocks of
/// pages mapped for them ([`Block`]), taken and given back one at a time,
/// rather than in a buffer that doubles as it grows: each buffer it outgrew
/// would stay, freed but resident, in the malloc arena of the thread that
/// happened to grow it. A queue's name is kept once per run of consecutive
/// entries of that queue (`runs`), not per entry.
#[derive(Default)]
struct Finished {
    /// Oldest first; the front block's first `head` entries are gone.
    blocks: VecDeque<Block<Entry>>,
    head: usize,
    len: usize,
    /// Each run's first entry (its number among all entries ever pushed)
    /// and its queue, oldest first; the front run may start before `first`.
    runs: VecDeque<(u64, Arc<str>)>,
    /// The number of the oldest entry.
    first: u64,
    /// What the entries' seconds count from: the first entry's time.
    epoch: Option<Instant>,
}

impl Finished {
    fn push(&mut self, queue: &str, digest: Digest) {
        let now = Instant::now();
        let epoch = *self.epoch.get_or_insert(now);
        let now = u32::try_from(now.duration_since(epoch).as_secs()).unwrap_or(u32::MAX);
        let period = FINISHED_FOR.as_secs() as u32;
        while self.len >= FINISHED_MAX
            || self
                .oldest()
                .is_some_and(|(at, _)| now.saturating_sub(*at) > period)
        {
            self.drop_oldest();
        }
        let pushed = match self.blocks.back_mut() {
            Some(block) => block.push((now, digest.prefix())),
            None => false,
        };
        if !pushed {
            // Without a page for it (the kernel out of memory), the entry
            // is not kept: the job would run again after a failover.
            let Some(mut block) = Block::new() else {
                return;
            };
            block.push((now, digest.prefix()));
            self.blocks.push_back(block);
        }
        let number = self.first + self.len as u64;
        self.len += 1;
        if !matches!(self.runs.back(), Some((_, last)) if **last == *queue) {
            self.runs.push_back((number, Arc::from(queue)));
        }
        while self
            .runs
            .get(1)
            .is_some_and(|(start, _)| *start <= self.first)
        {
            self.runs.pop_front();
        }
    }

    fn oldest(&self) -> Option<&Entry> {
        self.blocks
            .front()
            .and_then(|block| block.as_slice().get(self.head))
    }

    fn drop_oldest(&mut self) {
        let Some(block) = self.blocks.front() else {
            return;
        };
        self.head += 1;
        self.len -= 1;
        self.first += 1;
        if self.head == block.len() {
            self.head = 0;
            self.blocks.pop_front();
        }
    }

    /// Each entry's queue and digest's prefix, newest first.
    fn newest_first(&self) -> impl Iterator<Item = (&str, &Prefix)> {
        let mut runs = self.runs.iter().rev().peekable();
        let (first, head) = (self.first, self.head);
        self.blocks
            .iter()
            .enumerate()
            .rev()
            .flat_map(move |(at, block)| {
                block.as_slice()[if at == 0 { head } else { 0 }..]
                    .iter()
                    .rev()
            })
            .zip((0..self.len).rev())
            .filter_map(move |((_, digest), at)| {
                let number = first + at as u64;
                while runs.peek().is_some_and(|(start, _)| *start > number) {
                    runs.next();
                }
                runs.peek().map(|(_, queue)| (&**queue, digest))
            })
    }
}

#[derive(Default)]
pub(crate) struct Ledger {
    /// Per queue, the jobs this capsule holds in Redis: fetched, and not yet
    /// acknowledged there (including those in `acks`).
    held: BTreeMap<String, Vec<Held>>,
    /// Acknowledged here, not yet in Redis.
    pub(crate) acks: Vec<Ack>,
    /// A flush of `acks` is on its way.
    pub(crate) flush_scheduled: bool,
    /// Acknowledgements Redis took lately.
    finished: Finished,
}

impl Ledger {
    /// The acknowledgements a fetch on `thread` carries: its own. Carrying
    /// another thread's would free a slot that thread is about to take
    /// again with its own fetch, and wake a waiter to race it. `None`: all.
    pub(crate) fn take_acks(&mut self, thread: Option<ThreadId>) -> Vec<Ack> {
        let all = std::mem::take(&mut self.acks);
        let Some(thread) = thread else { return all };
        let (mine, others) = all.into_iter().partition(|a| a.thread == thread);
        self.acks = others;
        mine
    }

    /// The acknowledgements a flush sends at `now`: those made at least
    /// `grace` before (a younger one's thread is about to fetch, carrying
    /// it: sent alone, it would free a slot that thread takes again, and
    /// wake a waiter to race it); and when the oldest of the rest will be.
    pub(crate) fn take_aged(
        &mut self,
        now: Instant,
        grace: Duration,
    ) -> (Vec<Ack>, Option<Instant>) {
        let (aged, young): (Vec<Ack>, Vec<Ack>) = std::mem::take(&mut self.acks)
            .into_iter()
            .partition(|a| now.saturating_duration_since(a.at) >= grace);
        let next = young.iter().map(|a| a.at + grace).min();
        self.acks = young;
        (aged, next)
    }

    pub(crate) fn owes(&self, thread: ThreadId) -> bool {
        self.acks.iter().any(|a| a.thread == thread)
    }

    pub(crate) fn hold(&mut self, queue: &str, job: &[u8]) {
        let held = Held {
            digest: Digest::of(job),
            job: job.to_vec(),
        };
        self.held.entry(queue.to_owned()).or_default().push(held);
    }

    pub(crate) fn forget(&mut self, queue: &str, digest: &Digest) {
        if let Some(jobs) = self.held.get_mut(queue) {
            if let Some(at) = jobs.iter().position(|h| h.digest == *digest) {
                jobs.swap_remove(at);
            }
            if jobs.is_empty() {
                self.held.remove(queue);
            }
        }
    }

    /// A job of `queue` is finished and Redis took its acknowledgement.
    pub(crate) fn finished(&mut self, queue: &str, digest: Digest) {
        self.finished.push(queue, digest);
    }

    /// The reconciliation script's arguments after the capsule's UUID: how
    /// many queues, each with the jobs held in it; then, if `with_finished`,
    /// how many queues, each with the digests' prefixes of its jobs lately
    /// finished, newest first.
    pub(crate) fn reconcile_args(&self, with_finished: bool) -> Vec<Vec<u8>> {
        let mut args = vec![self.held.len().to_string().into_bytes()];
        for (queue, jobs) in &self.held {
            args.push(queue.clone().into_bytes());
            args.push(jobs.len().to_string().into_bytes());
            args.extend(jobs.iter().map(|h| h.job.clone()));
        }
        let mut finished: BTreeMap<&str, Vec<&Prefix>> = BTreeMap::new();
        if with_finished {
            let mut seen = HashSet::new();
            for (queue, digest) in self.finished.newest_first() {
                if seen.insert((queue, digest)) {
                    finished.entry(queue).or_default().push(digest);
                }
            }
        }
        args.push(finished.len().to_string().into_bytes());
        for (queue, digests) in finished {
            args.push(queue.as_bytes().to_vec());
            args.push(digests.len().to_string().into_bytes());
            args.extend(digests.into_iter().map(|p| hex(&p.0).into_bytes()));
        }
        args
    }

    /// Every queue this capsule holds a job of.
    pub(crate) fn queues(&self) -> impl Iterator<Item = &String> {
        self.held.keys()
    }

    #[cfg(test)]
    fn held_count(&self, queue: &str) -> usize {
        self.held.get(queue).map_or(0, Vec::len)
    }
}

#[cfg(test)]
mod tests;
