//! The Redis data model, shared with the pure-Ruby sidekiq-limit_fetch v5 so
//! that processes of both gems can share limits during a migration.

pub const PREFIX: &str = "sidekiq:limit_fetch:";
/// Registered capsules, this gem's and v5's. A v5 process removes from it
/// any capsule it finds dead (and forgets it), hence [`REGISTERED`].
pub const CAPSULES: &str = "sidekiq:limit_fetch:capsules";
/// This gem's registered capsules alone, a set v5 never touches: a dead
/// capsule that a v5 process reaped first (from [`CAPSULES`], and its busy
/// entries in v5's queues) is still found here, and its in-progress jobs go
/// back.
pub const REGISTERED: &str = "sidekiq:limit_fetch:registered";
/// This gem's registered capsules, each scored by when its heartbeat key
/// expires (milliseconds of Redis's clock, as the capsule reckons it from
/// `TIME`): written with the heartbeat at each beat, removed with the
/// registration. A beat reads the capsules whose score has passed (one
/// `ZRANGE ... BYSCORE`) instead of asking after every capsule's heartbeat;
/// the heartbeat key stays what decides (v5 reads it, and the reaper checks
/// it before it reaps). v5 never writes it: see [`CENSUS`].
pub const BEATS: &str = "sidekiq:limit_fetch:beats";
/// Present for one heartbeat period (of the capsule that set it, whose UUID
/// it holds) after a beat looked for capsules that are in [`CAPSULES`] or
/// [`REGISTERED`] but not in [`BEATS`] (a v5 process's, one of an older
/// release of this gem), whose heartbeat key only tells whether they live:
/// one such look per period across the fleet, whatever its size. The same
/// beat takes one step of the walk over capsules' queue sets left by dead
/// capsules (see src/lua/stray_queues.lua).
pub const CENSUS: &str = "sidekiq:limit_fetch:census";
/// The data format in force across the fleet: `"<format>:<since_ms>"`, the
/// format (1 or 2) and when it took effect (milliseconds of Redis's clock),
/// with `":pinned"` after them while `sidekiq-limits format 1` holds it
/// (src/format.rs). Absent: format 1 since forever. Processes of older
/// releases, and v5, never read it: they speak format 1 alone.
pub const FORMAT: &str = "sidekiq:limit_fetch:format";
/// The highest data format each capsule of this gem speaks, by UUID: set
/// with its registration, removed with it (src/lua/reap.lua). The census
/// reads it (src/format.rs): a live capsule without an entry is of an older
/// release, or v5's.
pub const FORMATS: &str = "sidekiq:limit_fetch:formats";
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

/// Present while the queue is paused: no fetch takes its jobs, whatever its
/// limits. Its value is not read; a TTL ends a pause by itself.
pub fn paused(queue: &str) -> String {
    format!("{PREFIX}queue:{queue}:paused")
}

/// A queue's rate, set at run time or from the configuration:
/// `"<limit>/<period in seconds>"` (see limits.rs, `parse_rate`). Without
/// one the queue has no rate.
pub fn rate(queue: &str) -> String {
    format!("{PREFIX}queue:{queue}:rate")
}

/// A queue's starts within its rate's window: a sorted set scored by start
/// time (microseconds of Redis's clock), expiring with its last start.
pub fn starts(queue: &str) -> String {
    format!("{PREFIX}queue:{queue}:starts")
}

/// SCAN pattern for every key of every queue (limits, busy lists, pauses):
/// the queues the gem knows of besides Sidekiq's own.
pub const QUEUE_PATTERN: &str = "sidekiq:limit_fetch:queue:*";

/// The suffixes of a queue's keys, after its name (see [`QUEUE_PATTERN`]).
pub const QUEUE_SUFFIXES: [&str; 8] = [
    ":limit",
    ":process_limit",
    ":busy",
    ":paused",
    ":rate",
    ":starts",
    ":limit_range",
    ":adaptive",
];

/// The queue a key of [`QUEUE_PATTERN`] belongs to, if it is one of a
/// queue's keys.
pub fn queue_of(key: &str) -> Option<&str> {
    let rest = key.strip_prefix(PREFIX)?.strip_prefix("queue:")?;
    QUEUE_SUFFIXES.iter().find_map(|s| rest.strip_suffix(s))
}

/// A capsule's heartbeat: "1", expiring 4 heartbeat periods after the last
/// beat. The value is v5's (which reaps a registered capsule whose
/// heartbeat reads anything else): what else the control plane knows of a
/// capsule is in [`capsule_info`].
pub fn heartbeat(uuid: &str) -> String {
    format!("{PREFIX}capsule:{uuid}:heartbeat")
}

/// The value a live capsule's heartbeat key holds (see [`heartbeat`]).
pub const ALIVE: &str = "1";

/// UUIDs found holding busy slots while neither registered nor beating,
/// each with the time (Redis's, in seconds) a beat first found it so: a
/// capsule still so a grace period later is reaped (see src/lua/orphans.lua).
/// Registering removes a capsule from it.
pub const UNREGISTERED: &str = "sidekiq:limit_fetch:unregistered";

/// Present (with a TTL of one heartbeat expiry) after a capsule came back
/// from an interruption: beats that failed (Redis down, restarting or
/// unreachable) or a gap longer than its heartbeat's expiry (its process
/// frozen). Other capsules' heartbeats may have expired for the same
/// reason while they live: nobody reaps while it exists, so that every
/// live capsule has had a full expiry to beat again. Its value, the UUID
/// of the capsule that set it, is for people.
pub const OUTAGE: &str = "sidekiq:limit_fetch:outage";

/// The prefix of Sidekiq's name for a queue's list, `queue:<name>`.
pub const QUEUE_PREFIX: &str = "queue:";

/// The UUID of the last witness to beat (a capsule that may take others'
/// silence for death), expiring one heartbeat expiry (of that capsule's)
/// later: present while witnesses beat. A capsule that finds it, written
/// by another, when it first registers knew Redis served beats then: it is
/// a witness at once; one that does not (the first after an outage that
/// every capsule sat out, or the first ever) becomes one once its own beats
/// have gone on for an expiry.
pub const LAST_BEAT: &str = "sidekiq:limit_fetch:last_beat";

/// Sidekiq's own list for a queue.
pub fn queue(name: &str) -> String {
    format!("{QUEUE_PREFIX}{name}")
}

/// A queue's bare name, from its name or from Sidekiq's name of its list
/// ([`queue`]). The core, its keys and its scripts name a queue by the bare
/// name; the Ruby side takes the prefix off where a job comes in
/// (lib/sidekiq/limit_fetch/unit_of_work.rb), and the core takes it off
/// again here, where a name comes in from its callers: a fetch's queues and
/// an acknowledgement's queue.
pub fn queue_name(name: &str) -> &str {
    name.strip_prefix(QUEUE_PREFIX).unwrap_or(name)
}

/// A capsule's list of the jobs of `queue` it fetched and has not yet
/// acknowledged or pushed back; the reaper returns them if it dies.
pub fn in_progress(uuid: &str, queue: &str) -> String {
    format!("{PREFIX}capsule:{uuid}:inprogress:{queue}")
}

/// What a capsule says of itself for the control plane (its process's
/// Sidekiq identity, its queues...), as the Ruby side writes it (JSON); the
/// core stores it at each heartbeat and never reads it.
pub fn capsule_info(uuid: &str) -> String {
    format!("{PREFIX}capsule:{uuid}:info")
}

/// The queues a capsule has in-progress lists for.
pub fn capsule_queues(uuid: &str) -> String {
    format!("{PREFIX}capsule:{uuid}:queues")
}

/// Times each job (by SHA1 of its payload) was recovered from a dead capsule.
pub const RECOVERIES: &str = "sidekiq:limit_fetch:recoveries";

/// How many reaps counted a recovery, expiring with [`RECOVERIES`]: a
/// hand-over that read it unchanged since it found [`RECOVERIES`] gone
/// leaves out the acknowledgement's `HDEL` (capsule/hand_over/).
pub const RECOVERED: &str = "sidekiq:limit_fetch:recovered";

/// Sidekiq's dead set, where a job recovered too many times goes.
pub const DEAD: &str = "dead";

/// A job limit's stored value, set at run time: without one, the default
/// each job carries applies. A job limit (a job class's, or one key's) is
/// named by the id its jobs carry (see lib/sidekiq/limit_fetch/job_limits.rb).
pub fn job_limit(id: &str) -> String {
    format!("{PREFIX}limit:{id}:limit")
}

/// A job limit's busy slots: one entry, the capsule's UUID, per running job.
pub fn job_busy(id: &str) -> String {
    format!("{PREFIX}limit:{id}:busy")
}

/// A job limit's parked jobs, oldest last: set aside by a fetch that found
/// the limit full, sent back to their queues as slots free.
pub fn parked(id: &str) -> String {
    format!("{PREFIX}limit:{id}:parked")
}

/// A job limit's stored rate, set at run time (as [`rate`]): without one,
/// the rate its jobs carry applies.
pub fn job_rate(id: &str) -> String {
    format!("{PREFIX}limit:{id}:rate")
}

/// A job limit's starts within its rate's window (as [`starts`]).
pub fn job_starts(id: &str) -> String {
    format!("{PREFIX}limit:{id}:starts")
}

/// How many of a job limit's parked jobs went back to their queues for its
/// rate and have not started yet: no release comes before they all started.
/// Expires a period after the last release.
pub fn job_released(id: &str) -> String {
    format!("{PREFIX}limit:{id}:released")
}

/// Present while a job limit backs off (a job heard "too many requests"
/// from what it protects): no job of it starts until the time it holds,
/// `"<until> <class> <jid>"` (until in microseconds of Redis's clock; the
/// class and jid of the job that backed it off, or "console"), and expires
/// then.
pub fn job_back_off(id: &str) -> String {
    format!("{PREFIX}limit:{id}:back_off")
}

/// How many back-offs of a job limit came one after another (each within a
/// minute of the last one's end): a back-off that names no time lasts
/// longer with each.
pub fn job_back_off_streak(id: &str) -> String {
    format!("{PREFIX}limit:{id}:back_off_streak")
}

/// The limit in force of an adaptive job limit (one declared as a range,
/// `concurrency: 1..20`), `"<value> <changed>"` (changed: when it last
/// grew, shrank or was confirmed at its ceiling, in microseconds of Redis's
/// clock). Expires when the limit has been idle for a while: it starts at
/// its floor again.
pub fn job_adaptive(id: &str) -> String {
    format!("{PREFIX}limit:{id}:adaptive")
}

/// A queue's adaptive limit (`limits: {queue: "1..20"}`), `"<floor>..<ceiling>"`,
/// written with the floor as its limit ([`limit`]): in force while that
/// limit is the floor (a limit set at run time holds instead). A reader that
/// knows no ranges (an older process of the gem) holds the floor.
pub fn limit_range(queue: &str) -> String {
    format!("{PREFIX}queue:{queue}:limit_range")
}

/// A queue's adaptive limit's limit in force, as [`job_adaptive`] holds a
/// job limit's.
pub fn adaptive(queue: &str) -> String {
    format!("{PREFIX}queue:{queue}:adaptive")
}

/// The id of the job limit that holds a fair queue's slots (`fair_limits:
/// {queue: 10}`): its stored value ([`job_limit`] of this id) is the
/// queue's fair limit, and says that the queue is one. The fetch writes its
/// entry into each job of the queue it takes, after the job's tenant's
/// (lua/fetch/fair_queue.lua). Not a key.
pub fn fair_queue_id(queue: &str) -> String {
    format!("queue:{queue}")
}

/// The tenants of a class declared `fair:` (by their key limit's id) that
/// have parked jobs, scored by the slots each holds over its weight: a slot
/// the class frees goes to the lowest (lua/prelude/fair.lua). Kept by the
/// fetch; a tenant whose parked jobs are gone leaves it at the next look.
pub fn fair_waiting(class_id: &str) -> String {
    format!("{PREFIX}limit:{class_id}:fair")
}

/// Present while a class that declares no limit backs off in the queue:
/// the latest end (microseconds of Redis's clock) of those back-offs, which
/// the queue's fetch reads with its limits; the classes are in
/// [`class_back_offs`].
pub fn class_back_off(queue: &str) -> String {
    format!("{PREFIX}queue:{queue}:class_back_off")
}

/// The classes that declare no limit and back off in the queue, each with
/// the id of the job limit whose back-off holds its jobs (`class:<name>`).
pub fn class_back_offs(queue: &str) -> String {
    format!("{PREFIX}queue:{queue}:class_back_offs")
}

/// The job limits a capsule's runs pass slots of (src/capsule/hand_over/):
/// freed with the rest if it dies. Its other job-limit slots are found by
/// the jobs holding them, in its in-progress lists, which carry their limits.
pub fn capsule_limits(uuid: &str) -> String {
    format!("{PREFIX}capsule:{uuid}:limits")
}

/// The ids of job limits with parked jobs.
pub const LIMITS_WITH_PARKED: &str = "sidekiq:limit_fetch:parked";

/// The ids of job limits with jobs parked behind their rate, scored by when
/// (microseconds of Redis's clock) their window may next open: the first
/// fetch after that sends them back.
pub const RATE_PARKED: &str = "sidekiq:limit_fetch:rate_parked";

/// [`RATE_PARKED`]'s first score, as text, absent with it: kept by the
/// scripts that change it, for a hand-over's `MGET` (capsule/hand_over/).
pub const RATE_DUE: &str = "sidekiq:limit_fetch:rate_due";

/// A time (microseconds of Redis's clock, as text) no limit in
/// [`RATE_PARKED`] opens before, absent with it: what the doorbell's arming
/// reads to ring as a window opens, in place of [`RATE_PARKED`] itself. The
/// scripts write it only when the first opening moves earlier than it says
/// (or appears): a window that opens, and its limit that waits for the
/// next, ring no sleeping fetcher.
pub const RATE_WAKE: &str = "sidekiq:limit_fetch:rate_wake";

/// The keys that say when the first window opens, in the order they are
/// read: [`RATE_WAKE`], else [`RATE_DUE`] (lua/fetch/rates.lua's
/// `wake_at`; the doorbell's re-read, capsule/wake_time.rs).
pub(crate) const WAKE_TIME: [&str; 2] = [RATE_WAKE, RATE_DUE];

/// How many back-offs each job limit had, by id.
pub const BACK_OFFS: &str = "sidekiq:limit_fetch:back_offs";

/// Jobs discarded at their limit (`on_limit: :discard`), per class.
pub const DISCARDED: &str = "sidekiq:limit_fetch:discarded";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_name_is_its_list_name_without_the_prefix_once() {
        for name in ["default", "", "a:b", "queue:nested"] {
            assert_eq!(queue_name(&queue(name)), name);
        }
        assert_eq!(queue_name("default"), "default");
    }
}
