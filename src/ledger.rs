//! What a capsule knows it holds: the jobs it fetched and has not yet
//! acknowledged in Redis, the acknowledgements still to be sent, and those
//! Redis took lately (which a failover may lose).

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::Arc;
use std::thread::ThreadId;
use std::time::{Duration, Instant};

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
/// FINISHED_MAX of them all its life, so each entry is small: the queue's
/// name is shared by consecutive entries of one queue rather than copied per
/// job, and the deque never grows past FINISHED_MAX (a push at full capacity
/// would double its buffer).
const FINISHED_FOR: Duration = Duration::from_secs(30);
const FINISHED_MAX: usize = 16_384;

#[derive(Default)]
pub(crate) struct Ledger {
    /// Per queue, the jobs this capsule holds in Redis: fetched, and not yet
    /// acknowledged there (including those in `acks`).
    held: BTreeMap<String, Vec<Held>>,
    /// Acknowledged here, not yet in Redis.
    pub(crate) acks: Vec<Ack>,
    /// A flush of `acks` is on its way.
    pub(crate) flush_scheduled: bool,
    /// Acknowledgements Redis took lately, oldest first: when, the job's
    /// queue and digest.
    finished: VecDeque<(Instant, Arc<str>, Digest)>,
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
        let now = Instant::now();
        while self.finished.len() >= FINISHED_MAX
            || self
                .finished
                .front()
                .is_some_and(|(at, _, _)| now.duration_since(*at) > FINISHED_FOR)
        {
            self.finished.pop_front();
        }
        let queue = match self.finished.back() {
            Some((_, last, _)) if **last == *queue => Arc::clone(last),
            _ => Arc::from(queue),
        };
        self.finished.push_back((now, queue, digest));
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
            for (_, queue, digest) in self.finished.iter().rev() {
                if seen.insert((queue, digest)) {
                    finished.entry(&**queue).or_default().push(digest);
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
        assert_eq!(ledger.finished.len(), FINISHED_MAX);
        // A buffer that doubled past the bound would keep twice the memory.
        assert!(ledger.finished.capacity() < 2 * FINISHED_MAX);
        let names: Vec<&Arc<str>> = ledger.finished.iter().map(|(_, q, _)| q).collect();
        assert!(Arc::ptr_eq(names[0], names[FINISHED_MAX - 2]));
        assert_eq!(&**names[FINISHED_MAX - 1], "other");
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
}
