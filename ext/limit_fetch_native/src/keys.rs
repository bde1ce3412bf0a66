//! `Sidekiq::LimitFetch::Keys`: the core's Redis key names (the data model,
//! `limit_fetch_core::keys`), for the gem's tools and specs, which build the
//! gem's keys through it instead of spelling them again. Pure functions of
//! their arguments: no Redis, so no GVL to release.

use limit_fetch_core::keys;
use magnus::value::ReprValue;
use magnus::{function, Error, Module, RClass, RModule, Ruby};

pub fn init(ruby: &Ruby, namespace: RClass) -> Result<(), Error> {
    let module = namespace.define_module("Keys")?;
    constants(ruby, module)?;
    module.define_module_function("queue", function!(queue, 1))?;
    module.define_module_function("limit", function!(limit, 1))?;
    module.define_module_function("process_limit", function!(process_limit, 1))?;
    module.define_module_function("busy", function!(busy, 1))?;
    module.define_module_function("paused", function!(paused, 1))?;
    module.define_module_function("rate", function!(rate, 1))?;
    module.define_module_function("starts", function!(starts, 1))?;
    module.define_module_function("limit_range", function!(limit_range, 1))?;
    module.define_module_function("adaptive", function!(adaptive, 1))?;
    module.define_module_function("job_rate", function!(job_rate, 1))?;
    module.define_module_function("job_starts", function!(job_starts, 1))?;
    module.define_module_function("queue_of", function!(queue_of, 1))?;
    module.define_module_function("heartbeat", function!(heartbeat, 1))?;
    module.define_module_function("in_progress", function!(in_progress, 2))?;
    module.define_module_function("capsule_info", function!(capsule_info, 1))?;
    module.define_module_function("capsule_queues", function!(capsule_queues, 1))?;
    module.define_module_function("capsule_limits", function!(capsule_limits, 1))?;
    module.define_module_function("job_limit", function!(job_limit, 1))?;
    module.define_module_function("job_busy", function!(job_busy, 1))?;
    module.define_module_function("parked", function!(parked, 1))?;
    module.define_module_function("fair_waiting", function!(fair_waiting, 1))?;
    Ok(())
}

/// Frozen, as Ruby's own string constants are: a tool that appended to one
/// would change the key every other reader builds.
fn constants(ruby: &Ruby, module: RModule) -> Result<(), Error> {
    for (name, value) in [
        ("PREFIX", keys::PREFIX),
        ("CAPSULES", keys::CAPSULES),
        ("REGISTERED", keys::REGISTERED),
        ("BEATS", keys::BEATS),
        ("CENSUS", keys::CENSUS),
        ("UNREGISTERED", keys::UNREGISTERED),
        ("OUTAGE", keys::OUTAGE),
        ("LAST_BEAT", keys::LAST_BEAT),
        ("FORMAT", keys::FORMAT),
        ("FORMATS", keys::FORMATS),
        ("RECOVERIES", keys::RECOVERIES),
        ("DEAD", keys::DEAD),
        ("PARKED", keys::LIMITS_WITH_PARKED),
        ("DISCARDED", keys::DISCARDED),
        ("RATE_PARKED", keys::RATE_PARKED),
        ("RATE_DUE", keys::RATE_DUE),
        ("RECOVERED", keys::RECOVERED),
        ("ALIVE", keys::ALIVE),
        ("BUSY_PATTERN", keys::BUSY_PATTERN),
        ("QUEUE_PATTERN", keys::QUEUE_PATTERN),
        ("QUEUE_PREFIX", keys::QUEUE_PREFIX),
    ] {
        let text = ruby.str_new(value);
        text.freeze();
        module.const_set(name, text)?;
    }
    Ok(())
}

fn queue(name: String) -> String {
    keys::queue(&name)
}

fn limit(queue: String) -> String {
    keys::limit(&queue)
}

fn process_limit(queue: String) -> String {
    keys::process_limit(&queue)
}

fn busy(queue: String) -> String {
    keys::busy(&queue)
}

fn paused(queue: String) -> String {
    keys::paused(&queue)
}

/// The queue a key of one belongs to (its limits, busy list, pause), or nil.
fn queue_of(key: String) -> Option<String> {
    keys::queue_of(&key).map(str::to_owned)
}

fn heartbeat(uuid: String) -> String {
    keys::heartbeat(&uuid)
}

fn in_progress(uuid: String, queue: String) -> String {
    keys::in_progress(&uuid, &queue)
}

fn capsule_info(uuid: String) -> String {
    keys::capsule_info(&uuid)
}

fn capsule_queues(uuid: String) -> String {
    keys::capsule_queues(&uuid)
}

fn capsule_limits(uuid: String) -> String {
    keys::capsule_limits(&uuid)
}

fn job_limit(id: String) -> String {
    keys::job_limit(&id)
}

fn job_busy(id: String) -> String {
    keys::job_busy(&id)
}

fn parked(id: String) -> String {
    keys::parked(&id)
}

fn fair_waiting(class_id: String) -> String {
    keys::fair_waiting(&class_id)
}

fn rate(queue: String) -> String {
    keys::rate(&queue)
}

fn starts(queue: String) -> String {
    keys::starts(&queue)
}

fn limit_range(queue: String) -> String {
    keys::limit_range(&queue)
}

fn adaptive(queue: String) -> String {
    keys::adaptive(&queue)
}

fn job_rate(id: String) -> String {
    keys::job_rate(&id)
}

fn job_starts(id: String) -> String {
    keys::job_starts(&id)
}
