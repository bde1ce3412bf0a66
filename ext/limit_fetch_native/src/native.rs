//! `Sidekiq::LimitFetch::Native`: one capsule's handle on the core, for
//! the capsule's own work alone (fetch, acknowledge, requeue, beat,
//! register, deregister, and the defaults it writes at start); reading and
//! setting limits is administration, in `native_admin.rs`.
//!
//! Thin by design: convert arguments while holding the GVL, run the core
//! call without it (see `nogvl`), convert the answer back. The queue names
//! it takes and gives are bare, without Sidekiq's `queue:` prefix.

use limit_fetch_core::{Capsule, Discarded, Error as CoreError, Fetched, Wait};
use magnus::{function, method, prelude::*, Error, RArray, RClass, RString, Ruby, Value};

use crate::errors::to_ruby;
use crate::helpers::{array_of, seconds};
use crate::nogvl::{call, without_gvl, without_gvl_or};
use crate::{
    beat_report, capsule_options, default_limit, default_range, default_rate, redis_settings,
};

#[magnus::wrap(class = "Sidekiq::LimitFetch::Native", free_immediately, size)]
struct Native {
    capsule: Capsule,
}

impl Native {
    /// `settings`: a `RedisSettings`; `options`: a `CapsuleOptions`.
    fn new(ruby: &Ruby, settings: Value, options: Value) -> Result<Self, Error> {
        let settings = redis_settings::from_ruby(ruby, settings)?;
        let options = capsule_options::from_ruby(ruby, options)?;
        Ok(Self {
            capsule: Capsule::new(&settings, options),
        })
    }

    fn uuid(&self) -> String {
        self.capsule.uuid().to_owned()
    }

    /// What the capsule says of itself to a control plane (JSON, from
    /// Client#start), stored from its next registration on.
    fn describe(&self, info: String) {
        self.capsule.describe(info);
    }

    /// The queues the capsule fetches from (bare names, from Client#start):
    /// its beats look in their busy lists for slots of capsules neither
    /// registered nor beating.
    fn serve(&self, queues: Vec<String>) {
        self.capsule.serve(&queues);
    }

    /// Seconds its heartbeat key lives (4 heartbeat periods).
    fn heartbeat_ttl(&self) -> u64 {
        self.capsule.heartbeat_ttl()
    }

    /// Round trips this capsule made to Redis so far (for the benchmark).
    fn round_trips(&self) -> u64 {
        self.capsule.round_trips()
    }

    /// `[queue_name, job]` or nil, from bare queue names (see UnitOfWork),
    /// with a third element `[[job, job limit id], ...]` (each discarded
    /// job's whole payload) when fetches of this capsule discarded jobs at
    /// their limit since the last call
    /// (then `[nil, nil, [...]]` if no job came). An Array rather than a
    /// `Data`: this is the hot path, one per job, and Ruby unpacks it at
    /// once (LimitFetch#retrieve_work). When nothing is
    /// eligible, waits up to `timeout` seconds for a job or a free slot
    /// (polling every `poll` seconds if Redis cannot notify). An interrupted
    /// fetch has put its job back.
    fn fetch(
        ruby: &Ruby,
        rb_self: &Self,
        queues: Vec<String>,
        timeout: f64,
        poll: f64,
    ) -> Result<Option<RArray>, Error> {
        let wait = Wait {
            timeout: seconds(ruby, "timeout", timeout)?,
            poll: seconds(ruby, "poll", poll)?,
        };
        let capsule = rb_self.capsule.clone();
        let mut fetch = capsule
            .start_fetch(&queues, wait)
            .map_err(|e| to_ruby(ruby, e))?;
        // A reply that is already here is taken without releasing the GVL.
        let now = fetch.try_now().transpose().map_err(|e| to_ruby(ruby, e))?;
        let fetched = match now {
            Some(fetched) => fetched,
            // An interrupt that raised nothing (a signal such as SIGCHLD, with
            // no trap that raises) must not turn into "no job": wait again for
            // the same reply. A raise drops `fetch`, which gives back a late job.
            None => loop {
                let giver = capsule.clone();
                let abandon = move |result: limit_fetch_core::Result<Option<Fetched>>| {
                    if let Ok(Some(fetched)) = result {
                        giver.give_back(fetched);
                    }
                };
                match without_gvl_or(ruby, |interrupt| fetch.wait(interrupt), abandon)? {
                    None | Some(Err(CoreError::Interrupted)) => continue,
                    Some(result) => break result.map_err(|e| to_ruby(ruby, e))?,
                }
            },
        };
        let discarded = capsule.take_discarded();
        if fetched.is_none() && discarded.is_empty() {
            return Ok(None);
        }
        let reply = ruby.ary_new_capa(3);
        match fetched {
            Some(f) => {
                reply.push(ruby.str_new(&f.queue))?;
                reply.push(ruby.enc_str_new(&f.job, ruby.utf8_encoding()))?;
            }
            None => {
                reply.push(ruby.qnil())?;
                reply.push(ruby.qnil())?;
            }
        }
        if !discarded.is_empty() {
            reply.push(discarded_list(ruby, discarded)?)?;
        }
        Ok(Some(reply))
    }

    /// Marks a fetched job finished; returns at once (see the core's
    /// `Capsule::acknowledge`). Never fails: an acknowledgement Redis cannot
    /// take now is sent again later.
    fn acknowledge(rb_self: &Self, queue: String, job: RString) {
        // SAFETY: the bytes are copied while the GVL is held.
        let job = unsafe { job.as_slice() }.to_vec();
        rb_self.capsule.acknowledge(&queue, job);
    }

    /// `[[job, job limit id], ...]`: the jobs this capsule's fetches
    /// discarded that no fetch's reply has handed over yet (a fetching
    /// thread walked away); empty if none. Each is handed over once.
    fn take_discarded(ruby: &Ruby, rb_self: &Self) -> Result<RArray, Error> {
        discarded_list(ruby, rb_self.capsule.take_discarded())
    }

    /// Ends waiting fetches now; later ones do not wait.
    fn quiet(&self) {
        self.capsule.quiet();
    }

    /// Sends pending acknowledgements now.
    fn flush(ruby: &Ruby, rb_self: &Self) -> Result<(), Error> {
        let capsule = rb_self.capsule.clone();
        call(ruby, |interrupt| capsule.flush(interrupt))
    }

    /// `jobs`: `[[queue_name, job], ...]`.
    fn requeue(ruby: &Ruby, rb_self: &Self, pairs: RArray) -> Result<(), Error> {
        let mut jobs = Vec::with_capacity(pairs.len());
        for i in 0..pairs.len() {
            let pair: RArray = pairs.entry(i as isize)?;
            let job: RString = pair.entry(1)?;
            // SAFETY: the bytes are copied while the GVL is held.
            jobs.push((pair.entry::<String>(0)?, unsafe { job.as_slice() }.to_vec()));
        }
        let capsule = rb_self.capsule.clone();
        match without_gvl(ruby, |interrupt| capsule.requeue(jobs, interrupt))? {
            None | Some(Ok(())) | Some(Err(CoreError::Interrupted)) => Ok(()),
            Some(Err(err)) => Err(to_ruby(ruby, err)),
        }
    }

    /// Backs a job limit off (a `BackOffRequest`) for `job`, a fetched job
    /// of `queue` that ended: it goes back parked. Returns a `BackedOff`.
    fn back_off(
        ruby: &Ruby,
        rb_self: &Self,
        queue: String,
        job: RString,
        request: Value,
    ) -> Result<Value, Error> {
        let request = crate::back_off::from_ruby(ruby, request)?;
        // SAFETY: the bytes are copied while the GVL is held.
        let job = unsafe { job.as_slice() }.to_vec();
        let capsule = rb_self.capsule.clone();
        let done = call(ruby, |interrupt| {
            capsule.back_off(&queue, job.clone(), request.clone(), interrupt)
        })?;
        crate::back_off::backed_off(ruby, done)
    }

    /// A `BeatReport`.
    fn beat(ruby: &Ruby, rb_self: &Self) -> Result<Value, Error> {
        let capsule = rb_self.capsule.clone();
        let report = call(ruby, |interrupt| capsule.beat(interrupt))?;
        beat_report::to_ruby(ruby, report)
    }

    fn check_server(ruby: &Ruby, rb_self: &Self) -> Result<(), Error> {
        let capsule = rb_self.capsule.clone();
        call(ruby, |interrupt| capsule.check_server(interrupt))
    }

    fn register(ruby: &Ruby, rb_self: &Self) -> Result<(), Error> {
        let capsule = rb_self.capsule.clone();
        call(ruby, |interrupt| capsule.register(interrupt))
    }

    fn deregister(ruby: &Ruby, rb_self: &Self, queues: Vec<String>) -> Result<i64, Error> {
        let capsule = rb_self.capsule.clone();
        call(ruby, |interrupt| capsule.deregister(&queues, interrupt))
    }

    /// `rates`: `DefaultRate`s (queues' rates), written only where unset,
    /// and kept, as `set_default_limits` does.
    fn set_default_rates(ruby: &Ruby, rb_self: &Self, rates: RArray) -> Result<(), Error> {
        let rates = rates
            .into_iter()
            .map(|rate| default_rate::from_ruby(ruby, rate))
            .collect::<Result<Vec<_>, Error>>()?;
        let capsule = rb_self.capsule.clone();
        call(ruby, |interrupt| {
            capsule.set_default_rates(rates.clone(), interrupt)
        })
    }

    /// `ranges`: `DefaultRange`s (queues' adaptive limits), written only
    /// where unset, and kept, as `set_default_limits` does.
    fn set_default_ranges(ruby: &Ruby, rb_self: &Self, ranges: RArray) -> Result<(), Error> {
        let ranges = ranges
            .into_iter()
            .map(|range| default_range::from_ruby(ruby, range))
            .collect::<Result<Vec<_>, Error>>()?;
        let capsule = rb_self.capsule.clone();
        call(ruby, |interrupt| {
            capsule.set_default_ranges(ranges.clone(), interrupt)
        })
    }

    /// `limits`: `DefaultLimit`s, written only where unset. The capsule
    /// keeps them, to write them again the same way if Redis loses its data
    /// (`BeatReport#lost_data`).
    fn set_default_limits(ruby: &Ruby, rb_self: &Self, limits: RArray) -> Result<(), Error> {
        let limits = limits
            .into_iter()
            .map(|limit| default_limit::from_ruby(ruby, limit))
            .collect::<Result<Vec<_>, Error>>()?;
        let capsule = rb_self.capsule.clone();
        call(ruby, |interrupt| {
            capsule.set_default_limits(limits.clone(), interrupt)
        })
    }
}

/// `[[job, job limit id], ...]`, each job a UTF-8 String as Sidekiq's are.
fn discarded_list(ruby: &Ruby, discarded: Vec<Discarded>) -> Result<RArray, Error> {
    array_of(ruby, discarded, |ruby, d| {
        let pair = ruby.ary_new_capa(2);
        pair.push(ruby.enc_str_new(&d.job, ruby.utf8_encoding()))?;
        pair.push(ruby.str_new(&d.limit))?;
        Ok(pair)
    })
}

/// Runs a Rust panic through the path every core call takes (without the
/// GVL, caught, raised as `Sidekiq::LimitFetch::Error`), so that the specs
/// can prove a panic never crosses into Ruby, compacted heap or not.
/// `without_gvl` directly, not `call`, which retries: under GC stress this
/// also checks that a body Ruby did not start for a pending interrupt runs.
fn panic_through_binding(ruby: &Ruby, message: String) -> Result<(), Error> {
    without_gvl(ruby, |_| -> () { std::panic::panic_any(message) }).map(drop)
}

pub fn init(ruby: &Ruby, namespace: RClass) -> Result<(), Error> {
    let class = namespace.define_class("Native", ruby.class_object())?;
    class.define_singleton_method("new", function!(Native::new, 2))?;
    class.define_singleton_method("panic_through_binding", function!(panic_through_binding, 1))?;
    class.define_method("uuid", method!(Native::uuid, 0))?;
    class.define_method("round_trips", method!(Native::round_trips, 0))?;
    class.define_method("describe", method!(Native::describe, 1))?;
    class.define_method("serve", method!(Native::serve, 1))?;
    class.define_method("heartbeat_ttl", method!(Native::heartbeat_ttl, 0))?;
    class.define_method("fetch", method!(Native::fetch, 3))?;
    class.define_method("quiet", method!(Native::quiet, 0))?;
    class.define_method("take_discarded", method!(Native::take_discarded, 0))?;
    class.define_method("acknowledge", method!(Native::acknowledge, 2))?;
    class.define_method("flush", method!(Native::flush, 0))?;
    class.define_method("requeue", method!(Native::requeue, 1))?;
    class.define_method("back_off", method!(Native::back_off, 3))?;
    class.define_method("beat", method!(Native::beat, 0))?;
    class.define_method("check_server", method!(Native::check_server, 0))?;
    class.define_method("register", method!(Native::register, 0))?;
    class.define_method("deregister", method!(Native::deregister, 1))?;
    class.define_method("set_default_limits", method!(Native::set_default_limits, 1))?;
    class.define_method("set_default_rates", method!(Native::set_default_rates, 1))?;
    class.define_method("set_default_ranges", method!(Native::set_default_ranges, 1))?;
    Ok(())
}
