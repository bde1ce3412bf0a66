//! Reads `Sidekiq::LimitFetch::CapsuleOptions` (lib/sidekiq/limit_fetch/
//! shapes.rb), checked by Ruby (capsule_options.rb), into the core's
//! `CapsuleOptions`.

use limit_fetch_core::CapsuleOptions;
use magnus::{Error, RClass, Ruby, Value};

use crate::helpers::data::expect_instance;
use crate::helpers::{field, seconds, Pinned};

static CLASS: Pinned<RClass> = Pinned::new("CapsuleOptions");

pub fn init(namespace: RClass) -> Result<(), Error> {
    CLASS.init(namespace)
}

pub fn from_ruby(ruby: &Ruby, options: Value) -> Result<CapsuleOptions, Error> {
    let class = CLASS.get(ruby)?;
    expect_instance(ruby, options, class)?;
    let period: f64 = field(ruby, options, class, "heartbeat_period")?;
    Ok(CapsuleOptions {
        heartbeat_period: seconds(ruby, "heartbeat_period", period)?,
        max_recoveries: field(ruby, options, class, "max_recoveries")?,
        lookahead: field(ruby, options, class, "lookahead")?,
        ..CapsuleOptions::default()
    })
}
