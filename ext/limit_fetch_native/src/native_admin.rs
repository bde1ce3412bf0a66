//! `Sidekiq::LimitFetch::NativeAdmin`: the core's administration over a
//! connection of its own, with no capsule: what a console, a control plane,
//! a heartbeat's checks and the specs read and set limits, pauses and
//! capsules through (LimitFetch.admin). `native.rs` is the capsule's work
//! alone. Thin like it: every call runs without the GVL.

use limit_fetch_core::Limits;
use magnus::{
    function, method, prelude::*, Error, IntoValue, RArray, RClass, Ruby, TryConvert, Value,
};

use crate::helpers::symbol_enum::{LIMIT_KIND, RATE_OF};
use crate::helpers::{array_of, seconds};
use crate::nogvl::call;
use crate::{
    back_off, capsule_entry, data_format, fair_tenant, job_limit_state, queue_state, rate,
    rate_window, redis_settings, release_report, stored_limit,
};

#[magnus::wrap(class = "Sidekiq::LimitFetch::NativeAdmin", free_immediately, size)]
struct NativeAdmin {
    limits: Limits,
}

impl NativeAdmin {
    /// `settings`: a `RedisSettings`. Connects on first use.
    fn new(ruby: &Ruby, settings: Value) -> Result<Self, Error> {
        let settings = redis_settings::from_ruby(ruby, settings)?;
        Ok(Self {
            limits: Limits::new(&settings),
        })
    }

    /// `JobLimitState`s of `ids`, in one round trip.
    fn job_limits(ruby: &Ruby, rb_self: &Self, ids: Vec<String>) -> Result<RArray, Error> {
        let limits = rb_self.limits.clone();
        let states = call(ruby, |interrupt| limits.job_limits(&ids, interrupt))?;
        array_of(ruby, states, job_limit_state::to_ruby)
    }

    /// The `FairTenant`s with work of fair class limit `class_id`, by id.
    fn fair_tenants(ruby: &Ruby, rb_self: &Self, class_id: String) -> Result<RArray, Error> {
        let limits = rb_self.limits.clone();
        let tenants = call(ruby, |interrupt| limits.fair_tenants(&class_id, interrupt))?;
        array_of(ruby, tenants, fair_tenant::to_ruby)
    }

    /// Every class declared `fair:` whose tenants have work: `FairClass`es
    /// by id, each with its `FairTenant`s, in one round trip.
    fn fair_classes(ruby: &Ruby, rb_self: &Self) -> Result<RArray, Error> {
        let limits = rb_self.limits.clone();
        let classes = call(ruby, |interrupt| limits.fair_classes(interrupt))?;
        array_of(ruby, classes, fair_tenant::class_to_ruby)
    }

    /// Backs a job limit off (a `BackOffRequest`); returns a `BackedOff`.
    fn back_off(ruby: &Ruby, rb_self: &Self, request: Value) -> Result<Value, Error> {
        let request = back_off::from_ruby(ruby, request)?;
        let limits = rb_self.limits.clone();
        let done = call(ruby, |interrupt| limits.back_off(&request, interrupt))?;
        back_off::backed_off(ruby, done)
    }

    /// Ends a job limit's back-off now; returns [whether one held it, how
    /// many parked jobs went back to their queues].
    fn resume(ruby: &Ruby, rb_self: &Self, id: String) -> Result<(bool, u64), Error> {
        let limits = rb_self.limits.clone();
        call(ruby, |interrupt| limits.resume(&id, interrupt))
    }

    /// How many times each of `ids` backed off (0: never), in one round trip.
    fn back_off_counts(ruby: &Ruby, rb_self: &Self, ids: Vec<String>) -> Result<Vec<u64>, Error> {
        let limits = rb_self.limits.clone();
        call(ruby, |interrupt| limits.back_off_counts(&ids, interrupt))
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

    /// A stored rate (`of`: :queue or :job_limit), as the fetch reads it; nil
    /// without one.
    fn rate(ruby: &Ruby, rb_self: &Self, of: Value, name: String) -> Result<Value, Error> {
        let of = RATE_OF.get(ruby, of)?;
        let limits = rb_self.limits.clone();
        let stored = call(ruby, |interrupt| limits.rate(of, &name, interrupt))?;
        queue_state::optional_rate(ruby, stored)
    }

    /// Stores a rate (a `Rate`, checked by Ruby; nil: removes it); returns
    /// how many parked jobs went back to their queues.
    fn set_rate(
        ruby: &Ruby,
        rb_self: &Self,
        of: Value,
        name: String,
        value: Option<Value>,
    ) -> Result<u64, Error> {
        let of = RATE_OF.get(ruby, of)?;
        let value = value.map(|v| rate::from_ruby(ruby, v)).transpose()?;
        let limits = rb_self.limits.clone();
        call(ruby, |interrupt| {
            limits.set_rate(of, &name, value, interrupt)
        })
    }

    /// `RateWindow`s of `rates`, each `[of, name, Rate]` (the rate in
    /// force), in one round trip.
    fn rate_windows(ruby: &Ruby, rb_self: &Self, rates: RArray) -> Result<RArray, Error> {
        let rates = rates
            .into_iter()
            .map(|entry| {
                let (of, name, value): (Value, String, Value) = TryConvert::try_convert(entry)?;
                Ok((RATE_OF.get(ruby, of)?, name, rate::from_ruby(ruby, value)?))
            })
            .collect::<Result<Vec<_>, Error>>()?;
        let limits = rb_self.limits.clone();
        let windows = call(ruby, |interrupt| limits.rate_windows(&rates, interrupt))?;
        array_of(ruby, windows, rate_window::to_ruby)
    }

    /// A queue's limit (`which`: :limit or :process_limit), as the fetch
    /// reads it.
    fn limit(
        ruby: &Ruby,
        rb_self: &Self,
        queue: String,
        which: Value,
    ) -> Result<Option<u64>, Error> {
        let which = LIMIT_KIND.get(ruby, which)?;
        let limits = rb_self.limits.clone();
        call(ruby, |interrupt| limits.limit(&queue, which, interrupt))
    }

    /// Sets (nil: removes) a queue's limit, checked by Ruby (Limits.coerce).
    fn set_limit(
        ruby: &Ruby,
        rb_self: &Self,
        queue: String,
        which: Value,
        value: Option<u64>,
    ) -> Result<(), Error> {
        let which = LIMIT_KIND.get(ruby, which)?;
        let limits = rb_self.limits.clone();
        call(ruby, |interrupt| {
            limits.set_limit(&queue, which, value, interrupt)
        })
    }

    /// Both limits of each queue, as stored (unparsed): `StoredLimit`s.
    fn stored_limits(ruby: &Ruby, rb_self: &Self, queues: Vec<String>) -> Result<RArray, Error> {
        let limits = rb_self.limits.clone();
        let stored = call(ruby, |interrupt| limits.stored_limits(&queues, interrupt))?;
        array_of(ruby, stored, stored_limit::to_ruby)
    }

    /// `QueueState`s of `queues`, in one round trip.
    fn queue_states(ruby: &Ruby, rb_self: &Self, queues: Vec<String>) -> Result<RArray, Error> {
        let limits = rb_self.limits.clone();
        let states = call(ruby, |interrupt| limits.queue_states(&queues, interrupt))?;
        array_of(ruby, states, queue_state::to_ruby)
    }

    /// Pauses a queue, until unpaused (`seconds` nil) or for `seconds`
    /// (checked by Ruby).
    fn pause(
        ruby: &Ruby,
        rb_self: &Self,
        queue: String,
        duration: Option<f64>,
    ) -> Result<(), Error> {
        let duration = duration.map(|s| seconds(ruby, "pause", s)).transpose()?;
        let limits = rb_self.limits.clone();
        call(ruby, |interrupt| limits.pause(&queue, duration, interrupt))
    }

    /// Ends a queue's pause; true if it was paused.
    fn unpause(ruby: &Ruby, rb_self: &Self, queue: String) -> Result<bool, Error> {
        let limits = rb_self.limits.clone();
        call(ruby, |interrupt| limits.unpause(&queue, interrupt))
    }

    /// Names of the queues the gem holds a key of, sorted.
    fn known_queues(ruby: &Ruby, rb_self: &Self) -> Result<Vec<String>, Error> {
        let limits = rb_self.limits.clone();
        call(ruby, |interrupt| limits.known_queues(interrupt))
    }

    /// `CapsuleEntry`s of the registered capsules, sorted by UUID.
    fn capsules(ruby: &Ruby, rb_self: &Self) -> Result<RArray, Error> {
        let limits = rb_self.limits.clone();
        let entries = call(ruby, |interrupt| limits.capsules(interrupt))?;
        array_of(ruby, entries, capsule_entry::to_ruby)
    }

    /// Every parked job, and every in-progress job of a capsule that is not
    /// alive, back at the front of its queue: a `ReleaseReport`. Refuses
    /// (`refused`, nothing done) while capsules live, unless `force`.
    fn release_all(
        ruby: &Ruby,
        rb_self: &Self,
        force: bool,
        max_recoveries: u32,
    ) -> Result<Value, Error> {
        let limits = rb_self.limits.clone();
        let released = call(ruby, |interrupt| {
            limits.release_all(force, max_recoveries, interrupt)
        })?;
        release_report::to_ruby(ruby, released)
    }

    /// The waiting jobs of `queues` (empty: every queue with parked jobs),
    /// reading at most `budget` parked payloads whole (waiting.lua), as
    /// `[estimated, [[name, queued, parked, oldest_queued, oldest_parked],
    /// ...]]`; the payloads (nil unless `oldest`) are for latency.
    fn waiting(
        ruby: &Ruby,
        rb_self: &Self,
        queues: Vec<String>,
        budget: u64,
        oldest: bool,
    ) -> Result<RArray, Error> {
        let limits = rb_self.limits.clone();
        let found = call(ruby, |interrupt| {
            limits.waiting(&queues, budget, oldest, interrupt)
        })?;
        let payload = |raw: Option<Vec<u8>>| raw.map(|b| String::from_utf8_lossy(&b).into_owned());
        let rows = array_of(ruby, found.queues, |_, queue| {
            Ok((
                queue.name,
                queue.queued,
                queue.parked,
                payload(queue.oldest_queued),
                payload(queue.oldest_parked),
            ))
        })?;
        Ok(ruby.ary_new_from_values(&[found.estimated.into_value_with(ruby), rows.as_value()]))
    }

    /// The data format in force and each live capsule's highest: see
    /// data_format.rs.
    fn data_format(ruby: &Ruby, rb_self: &Self) -> Result<RArray, Error> {
        let limits = rb_self.limits.clone();
        let read = call(ruby, |interrupt| limits.data_format(interrupt))?;
        data_format::to_ruby(ruby, read)
    }

    /// Pins data format 1 (`pin` true) and converts format 2's data back,
    /// or unpins it: what changed (data_format.rs).
    fn set_data_format(ruby: &Ruby, rb_self: &Self, pin: bool) -> Result<RArray, Error> {
        let limits = rb_self.limits.clone();
        let change = call(ruby, |interrupt| {
            if pin {
                limits.pin_format_1(interrupt)
            } else {
                limits.unpin_format(interrupt)
            }
        })?;
        Ok(data_format::change_to_ruby(ruby, change))
    }

    /// Ids of the job limits with running or parked jobs.
    fn active_job_limits(ruby: &Ruby, rb_self: &Self) -> Result<Vec<String>, Error> {
        let limits = rb_self.limits.clone();
        call(ruby, |interrupt| limits.active_job_limits(interrupt))
    }
}

pub fn init(ruby: &Ruby, namespace: RClass) -> Result<(), Error> {
    let class = namespace.define_class("NativeAdmin", ruby.class_object())?;
    class.define_singleton_method("new", function!(NativeAdmin::new, 1))?;
    class.define_method("job_limits", method!(NativeAdmin::job_limits, 1))?;
    class.define_method("fair_tenants", method!(NativeAdmin::fair_tenants, 1))?;
    class.define_method("fair_classes", method!(NativeAdmin::fair_classes, 0))?;
    class.define_method("set_job_limit", method!(NativeAdmin::set_job_limit, 2))?;
    class.define_method("back_off", method!(NativeAdmin::back_off, 1))?;
    class.define_method("resume", method!(NativeAdmin::resume, 1))?;
    class.define_method("back_off_counts", method!(NativeAdmin::back_off_counts, 1))?;
    class.define_method("limit", method!(NativeAdmin::limit, 2))?;
    class.define_method("rate", method!(NativeAdmin::rate, 2))?;
    class.define_method("set_rate", method!(NativeAdmin::set_rate, 3))?;
    class.define_method("rate_windows", method!(NativeAdmin::rate_windows, 1))?;
    class.define_method("set_limit", method!(NativeAdmin::set_limit, 3))?;
    class.define_method("stored_limits", method!(NativeAdmin::stored_limits, 1))?;
    class.define_method("queue_states", method!(NativeAdmin::queue_states, 1))?;
    class.define_method("pause", method!(NativeAdmin::pause, 2))?;
    class.define_method("unpause", method!(NativeAdmin::unpause, 1))?;
    class.define_method("known_queues", method!(NativeAdmin::known_queues, 0))?;
    class.define_method("capsules", method!(NativeAdmin::capsules, 0))?;
    class.define_method("release_all", method!(NativeAdmin::release_all, 2))?;
    class.define_method("waiting", method!(NativeAdmin::waiting, 3))?;
    class.define_method("data_format", method!(NativeAdmin::data_format, 0))?;
    class.define_method("set_data_format", method!(NativeAdmin::set_data_format, 1))?;
    class.define_method(
        "active_job_limits",
        method!(NativeAdmin::active_job_limits, 0),
    )?;
    Ok(())
}
