//! Builds `Sidekiq::LimitFetch::StoredLimit` (lib/sidekiq/limit_fetch/
//! shapes.rb) from the core's `StoredLimit`, by keyword, as
//! beat_report.rs does and for the same reason.

use limit_fetch_core::StoredLimit;
use magnus::{Error, IntoValue, RClass, Ruby, Value};

use crate::helpers::symbol_enum::LIMIT_KIND;
use crate::helpers::{new_data, Pinned};

static CLASS: Pinned<RClass> = Pinned::new("StoredLimit");

pub fn init(namespace: RClass) -> Result<(), Error> {
    CLASS.init(namespace)
}

pub fn to_ruby(ruby: &Ruby, limit: StoredLimit) -> Result<Value, Error> {
    new_data(
        ruby,
        CLASS.get(ruby)?,
        &[
            ("queue", limit.queue.into_value_with(ruby)),
            (
                "kind",
                LIMIT_KIND.symbol(ruby, limit.kind)?.into_value_with(ruby),
            ),
            ("key", limit.key.into_value_with(ruby)),
            ("raw", limit.raw.into_value_with(ruby)),
        ],
    )
}
