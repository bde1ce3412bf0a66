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
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut hex = String::with_capacity(40);
        for byte in self.0 {
            hex.push(DIGITS[usize::from(byte >> 4)].into());
            hex.push(DIGITS[usize::from(byte & 15)].into());
        }
        hex
    }
}

/// A finished job whose removal from its in-progress list is still to be
/// sent: it rides on the capsule's next fetch, or a flush shortly after.
pub(crate) struct Ack {
    pub(crate) queue: String,
    pub(crate) job: Vec<u8>,
    pub(crate) digest: Digest,
    /// The thread that acknowledged: in Sidekiq, the one that fetches next.
    pub(crate) thread: ThreadId,
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

type Entry = (u32, Digest);

/// The acknowledgements Redis took lately, oldest first, in 24 bytes each:
/// when, in whole seconds since the first (so an entry is dropped 30 to 32 s
/// after, never earlier), and the job's digest. They are kept in blocks of
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
            Some(block) => block.push((now, digest)),
            None => false,
        };
        if !pushed {
            // Without a page for it (the kernel out of memory), the entry
            // is not kept: the job would run again after a failover.
            let Some(mut block) = Block::new() else {
                return;
            };
            block.push((now, digest));
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

    /// Each entry's queue and digest, newest first.
    fn newest_first(&self) -> impl Iterator<Item = (&str, &Digest)> {
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
    /// how many queues, each with the digests of its jobs lately finished,
    /// newest first.
    pub(crate) fn reconcile_args(&self, with_finished: bool) -> Vec<Vec<u8>> {
        let mut args = vec![self.held.len().to_string().into_bytes()];
        for (queue, jobs) in &self.held {
            args.push(queue.clone().into_bytes());
            args.push(jobs.len().to_string().into_bytes());
            args.extend(jobs.iter().map(|h| h.job.clone()));
        }
        let mut finished: BTreeMap<&str, Vec<&Digest>> = BTreeMap::new();
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
            args.extend(digests.into_iter().map(|d| d.hex().into_bytes()));
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
mod tests {
    use super::*;

    #[test]
    fn digest_matches_redis_sha1hex() {
        // redis-cli EVAL "return redis.sha1hex('job')" 0
        assert_eq!(
            Digest::of(b"job").hex(),
            "2eda8ad1632af052b0c74d6fcab6058b3a79cf25"
        );
    }

    #[test]
    fn a_fetch_carries_the_acknowledgements_of_its_own_thread() {
        let ack = |thread| Ack {
            queue: "q".into(),
            job: b"j".to_vec(),
            digest: Digest::of(b"j"),
            thread,
        };
        let here = std::thread::current().id();
        let there = std::thread::spawn(|| std::thread::current().id())
            .join()
            .expect("thread");
        let mut ledger = Ledger {
            acks: vec![ack(here), ack(there), ack(here)],
            ..Ledger::default()
        };
        assert_eq!(ledger.take_acks(Some(here)).len(), 2);
        assert!(!ledger.owes(here));
        assert!(ledger.owes(there));
        assert_eq!(ledger.take_acks(None).len(), 1);
        assert!(ledger.acks.is_empty());
    }

    #[test]
    fn forget_removes_one_copy() {
        let mut ledger = Ledger::default();
        let d = Digest::of(b"x");
        ledger.hold("q", b"x");
        ledger.hold("q", b"x");
        ledger.forget("q", &d);
        assert_eq!(ledger.held_count("q"), 1);
        ledger.forget("q", &d);
        assert_eq!(ledger.queues().count(), 0);
    }

    #[test]
    fn the_jobs_finished_lately_stay_within_their_bound_and_share_the_queue_name() {
        let mut ledger = Ledger::default();
        for n in 0..FINISHED_MAX + 1_000 {
            ledger.finished("q", Digest::of(n.to_string().as_bytes()));
        }
        ledger.finished("other", Digest::of(b"last"));
        let finished = &ledger.finished;
        assert_eq!(finished.len, FINISHED_MAX);
        assert_eq!(finished.newest_first().count(), FINISHED_MAX);
        // Blocks enough for the bound, and one partly gone.
        assert!(finished.blocks.len() <= FINISHED_MAX / Block::<Entry>::CAPACITY + 2);
        assert_eq!(std::mem::size_of::<Entry>(), 24);
        // One name per run of a queue: the run of "q" that the bound cut, and "other".
        assert_eq!(finished.runs.len(), 2);
        let names: Vec<&str> = finished.newest_first().map(|(q, _)| q).collect();
        assert_eq!(names[0], "other");
        assert!(names[1..].iter().all(|q| *q == "q"));
        let args = ledger.reconcile_args(true);
        // No job held; two queues finished lately, the newest first in each.
        assert_eq!(args[0], b"0");
        assert_eq!(args[1], b"2");
        assert_eq!(args[2], b"other");
        assert_eq!(args[4], Digest::of(b"last").hex().into_bytes());
        let q = args.iter().position(|a| a == b"q").map(|at| at + 1);
        assert_eq!(
            q.map(|at| args[at].clone()),
            Some((FINISHED_MAX - 1).to_string().into_bytes())
        );
        let newest = (FINISHED_MAX + 999).to_string();
        assert_eq!(
            q.map(|at| args[at + 1].clone()),
            Some(Digest::of(newest.as_bytes()).hex().into_bytes())
        );
    }

    #[test]
    fn each_job_finished_lately_keeps_its_queue_across_runs() {
        let queue = |n: usize| ["a", "b", "c"][(n / 3 + n / 7) % 3];
        let mut ledger = Ledger::default();
        let pushed = FINISHED_MAX + 5_000;
        for n in 0..pushed {
            ledger.finished(queue(n), Digest::of(n.to_string().as_bytes()));
        }
        let kept: Vec<(&str, Digest)> = ledger
            .finished
            .newest_first()
            .map(|(q, d)| (q, *d))
            .collect();
        let expected: Vec<(&str, Digest)> = (pushed - FINISHED_MAX..pushed)
            .rev()
            .map(|n| (queue(n), Digest::of(n.to_string().as_bytes())))
            .collect();
        assert!(kept == expected);
        assert!(ledger.finished.runs.len() <= FINISHED_MAX);
    }

    #[test]
    fn the_jobs_finished_lately_go_after_their_period_and_give_their_blocks_back() {
        let mut ledger = Ledger::default();
        for n in 0..Block::<Entry>::CAPACITY + 10 {
            ledger.finished("q", Digest::of(n.to_string().as_bytes()));
        }
        assert_eq!(ledger.finished.blocks.len(), 2);
        // Pushed FINISHED_FOR and 2 s ago, as far as the entries' seconds tell.
        let epoch = ledger.finished.epoch.expect("an epoch");
        ledger.finished.epoch = epoch.checked_sub(FINISHED_FOR + Duration::from_secs(2));
        ledger.finished("other", Digest::of(b"now"));
        let finished = &ledger.finished;
        assert_eq!(finished.len, 1);
        // The blocks of the entries gone are given back.
        assert_eq!(finished.blocks.len(), 1);
        let kept: Vec<(&str, Digest)> = finished.newest_first().map(|(q, d)| (q, *d)).collect();
        assert!(kept == vec![("other", Digest::of(b"now"))]);
        assert_eq!(finished.runs.len(), 1);
    }
}
