//! Reads `Sidekiq::LimitFetch::DefaultRange` (lib/sidekiq/limit_fetch/
//! shapes.rb), checked by Ruby (Limits.configured), into the core's
//! `(queue, floor, ceiling)`.

use magnus::{Error, RClass, Ruby, Value};

use crate::helpers::data::expect_instance;
use crate::helpers::{field, Pinned};

static CLASS: Pinned<RClass> = Pinned::new("DefaultRange");

pub fn init(namespace: RClass) -> Result<(), Error> {
    CLASS.init(namespace)
}

pub fn from_ruby(ruby: &Ruby, default: Value) -> Result<(String, u64, u64), Error> {
    let class = CLASS.get(ruby)?;
    expect_instance(ruby, default, class)?;
    Ok((
        field(ruby, default, class, "queue")?,
        field(ruby, default, class, "floor")?,
        field(ruby, default, class, "ceiling")?,
    ))
}
