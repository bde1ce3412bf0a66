//! Ruby binding of `limit_fetch_core`.
//!
//! One file per Ruby class or module the binding defines (`native.rs`, a
//! capsule's work; `native_admin.rs`, administration; `keys.rs`, the key
//! names), reads (`redis_settings.rs`, `capsule_options.rs`,
//! `default_limit.rs`, `default_rate.rs`, `default_range.rs`) or builds (`beat_report.rs`,
//! `stored_limit.rs`, `queue_state.rs`, `capsule_entry.rs`,
//! `job_limit_state.rs`, `fair_tenant.rs`, `data_format.rs`, `rate_window.rs`, `release_report.rs`, `errors.rs`; `rate.rs` both), each with its own `init`; the Ruby side defines and checks
//! the shapes (lib/sidekiq/limit_fetch/shapes.rb). This file only wires
//! them up.

mod back_off;
mod beat_report;
mod capsule_entry;
mod capsule_options;
mod data_format;
mod default_limit;
mod default_range;
mod default_rate;
mod errors;
mod fair_tenant;
mod helpers;
mod job_limit_state;
mod keys;
mod native;
mod native_admin;
mod nogvl;
mod queue_state;
mod rate;
mod rate_window;
mod redis_settings;
mod release_report;
mod stored_limit;

use magnus::{Error, Module, RClass, RModule, Ruby};

/// Runs when lib/sidekiq/limit_fetch/native_extension.rb requires the
/// extension, which it does after requiring the Ruby classes the binding
/// reads, builds and raises (shapes.rb, errors.rb): it looks them up and
/// pins them now.
#[magnus::init]
fn init(ruby: &Ruby) -> Result<(), Error> {
    let sidekiq: RModule = ruby.class_object().const_get("Sidekiq")?;
    let namespace: RClass = sidekiq.const_get("LimitFetch")?;
    errors::init(namespace)?;
    redis_settings::init(namespace)?;
    capsule_options::init(namespace)?;
    default_limit::init(namespace)?;
    default_rate::init(namespace)?;
    default_range::init(namespace)?;
    rate::init(namespace)?;
    rate_window::init(namespace)?;
    beat_report::init(namespace)?;
    stored_limit::init(namespace)?;
    queue_state::init(namespace)?;
    capsule_entry::init(namespace)?;
    job_limit_state::init(namespace)?;
    fair_tenant::init(namespace)?;
    back_off::init(namespace)?;
    release_report::init(namespace)?;
    keys::init(ruby, namespace)?;
    native::init(ruby, namespace)?;
    native_admin::init(ruby, namespace)
}
