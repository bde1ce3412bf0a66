//! What a capsule knows it holds: the jobs it fetched and has not yet
//! acknowledged in Redis, and the acknowledgements still to be sent.

use std::collections::BTreeMap;
use std::thread::ThreadId;

/// SHA1 of a job's payload: how the ledger and the Lua scripts (which have
/// `redis.sha1hex`) recognise a job without keeping or sending its payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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

#[derive(Default)]
pub(crate) struct Ledger {
    /// Per queue, the jobs this capsule holds in Redis: fetched, and not yet
    /// acknowledged there (including those in `acks`).
    held: BTreeMap<String, Vec<Digest>>,
    /// Acknowledged here, not yet in Redis.
    pub(crate) acks: Vec<Ack>,
    /// A flush of `acks` is on its way.
    pub(crate) flush_scheduled: bool,
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

    pub(crate) fn hold(&mut self, queue: &str, digest: Digest) {
        self.held.entry(queue.to_owned()).or_default().push(digest);
    }

    pub(crate) fn forget(&mut self, queue: &str, digest: &Digest) {
        if let Some(jobs) = self.held.get_mut(queue) {
            if let Some(at) = jobs.iter().position(|d| d == digest) {
                jobs.swap_remove(at);
            }
            if jobs.is_empty() {
                self.held.remove(queue);
            }
        }
    }

    /// Queues with the jobs held in each: the reconciliation script's arguments.
    pub(crate) fn held_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        for (queue, digests) in &self.held {
            args.push(queue.clone());
            args.push(digests.len().to_string());
            args.extend(digests.iter().map(Digest::hex));
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
        ledger.hold("q", d);
        ledger.hold("q", d);
        ledger.forget("q", &d);
        assert_eq!(ledger.held_count("q"), 1);
        ledger.forget("q", &d);
        assert_eq!(ledger.queues().count(), 0);
    }
}
