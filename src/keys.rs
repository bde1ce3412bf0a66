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
