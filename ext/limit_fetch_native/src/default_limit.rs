//! Reads `Sidekiq::LimitFetch::DefaultLimit` (lib/sidekiq/limit_fetch/
//! shapes.rb), checked by Ruby (Limits.configured), into the core's
//! `(name, kind, value)`.

use limit_fetch_core::LimitKind;
use magnus::{Error, RClass, Ruby, Value};

use crate::helpers::data::expect_instance;
use crate::helpers::symbol_enum::LIMIT_KIND;
use crate::helpers::{field, Pinned};

static CLASS: Pinned<RClass> = Pinned::new("DefaultLimit");

pub fn init(namespace: RClass) -> Result<(), Error> {
    CLASS.init(namespace)
}

pub fn from_ruby(ruby: &Ruby, limit: Value) -> Result<(String, LimitKind, u64), Error> {
    let class = CLASS.get(ruby)?;
    expect_instance(ruby, limit, class)?;
    Ok((
        field(ruby, limit, class, "name")?,
        LIMIT_KIND.get(ruby, field(ruby, limit, class, "kind")?)?,
        field(ruby, limit, class, "value")?,
    ))
}
