//! Reads `Sidekiq::LimitFetch::DefaultRate` (lib/sidekiq/limit_fetch/
//! shapes.rb), checked by Ruby (Rates.configured), into the core's
//! `(queue, rate)`.

use limit_fetch_core::Rate;
use magnus::{Error, RClass, Ruby, Value};

use crate::helpers::data::expect_instance;
use crate::helpers::{field, Pinned};

static CLASS: Pinned<RClass> = Pinned::new("DefaultRate");

pub fn init(namespace: RClass) -> Result<(), Error> {
    CLASS.init(namespace)
}

pub fn from_ruby(ruby: &Ruby, default: Value) -> Result<(String, Rate), Error> {
    let class = CLASS.get(ruby)?;
    expect_instance(ruby, default, class)?;
    let rate: Value = field(ruby, default, class, "rate")?;
    Ok((
        field(ruby, default, class, "queue")?,
        crate::rate::from_ruby(ruby, rate)?,
    ))
}
