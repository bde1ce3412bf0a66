//! `Sidekiq::LimitFetch::NativeLimits`: the core's limits administration
//! over a connection of its own, with no capsule: what a console or a
//! control plane reads and sets limits through (lib/sidekiq/limit_fetch/
//! job_limit.rb). Thin like `native.rs`: every call runs without the GVL.

use limit_fetch_core::Limits;
use magnus::{function, method, prelude::*, Error, RArray, RClass, Ruby, Value};

use crate::nogvl::call;
use crate::redis_settings;

#[magnus::wrap(class = "Sidekiq::LimitFetch::NativeLimits", free_immediately, size)]
struct NativeLimits {
    limits: Limits,
}

impl NativeLimits {
    /// `settings`: a `RedisSettings`. Connects on first use.
    fn new(ruby: &Ruby, settings: Value) -> Result<Self, Error> {
        let settings = redis_settings::from_ruby(ruby, settings)?;
        Ok(Self {
            limits: Limits::new(&settings),
        })
    }

    /// `[[id, stored limit or nil, running, parked], ...]` for `ids`.
    fn job_limits(ruby: &Ruby, rb_self: &Self, ids: Vec<String>) -> Result<RArray, Error> {
        let limits = rb_self.limits.clone();
        let states = call(ruby, |interrupt| limits.job_limits(&ids, interrupt))?;
        let array = ruby.ary_new_capa(states.len());
        for s in states {
            array.push((s.id, s.stored, s.running, s.parked))?;
        }
        Ok(array)
    }

    /// Stores a job limit (nil: back to each job's default); returns how many
    /// parked jobs went back to their queues.
    fn set_job_limit(
        ruby: &Ruby,
        rb_self: &Self,
        id: String,
        value: Option<u64>,
    ) -> Result<u64, Error> {
        let limits = rb_self.limits.clone();
        call(ruby, |interrupt| {
            limits.set_job_limit(&id, value, interrupt)
        })
    }

    /// Ids of the job limits with running or parked jobs.
    fn active_job_limits(ruby: &Ruby, rb_self: &Self) -> Result<Vec<String>, Error> {
        let limits = rb_self.limits.clone();
        call(ruby, |interrupt| limits.active_job_limits(interrupt))
    }
}

pub fn init(ruby: &Ruby, namespace: RClass) -> Result<(), Error> {
    let class = namespace.define_class("NativeLimits", ruby.class_object())?;
    class.define_singleton_method("new", function!(NativeLimits::new, 1))?;
    class.define_method("job_limits", method!(NativeLimits::job_limits, 1))?;
    class.define_method("set_job_limit", method!(NativeLimits::set_job_limit, 2))?;
    class.define_method(
        "active_job_limits",
        method!(NativeLimits::active_job_limits, 0),
    )?;
    Ok(())
}
