//! The Redis data model, shared with the pure-Ruby sidekiq-limit_fetch v5 so
//! that processes of both gems can share limits during a migration.

pub const PREFIX: &str = "sidekiq:limit_fetch:";
pub const CAPSULES: &str = "sidekiq:limit_fetch:capsules";
/// SCAN pattern for every queue's busy list (used to reap dead capsules on
/// queues this process does not serve).
pub const BUSY_PATTERN: &str = "sidekiq:limit_fetch:queue:*:busy";

pub fn limit(queue: &str) -> String {
    format!("{PREFIX}queue:{queue}:limit")
}

pub fn process_limit(queue: &str) -> String {
    format!("{PREFIX}queue:{queue}:process_limit")
}

pub fn busy(queue: &str) -> String {
    format!("{PREFIX}queue:{queue}:busy")
}

pub fn heartbeat(uuid: &str) -> String {
    format!("{PREFIX}capsule:{uuid}:heartbeat")
}

/// Sidekiq's own list for a queue.
pub fn queue(name: &str) -> String {
    format!("queue:{name}")
}

/// A capsule's list of the jobs of `queue` it fetched and has not yet
/// acknowledged or pushed back; the reaper returns them if it dies.
pub fn in_progress(uuid: &str, queue: &str) -> String {
    format!("{PREFIX}capsule:{uuid}:inprogress:{queue}")
}

/// The queues a capsule has in-progress lists for.
pub fn capsule_queues(uuid: &str) -> String {
    format!("{PREFIX}capsule:{uuid}:queues")
}

/// Times each job (by SHA1 of its payload) was recovered from a dead capsule.
pub const RECOVERIES: &str = "sidekiq:limit_fetch:recoveries";

/// Sidekiq's dead set, where a job recovered too many times goes.
pub const DEAD: &str = "dead";
