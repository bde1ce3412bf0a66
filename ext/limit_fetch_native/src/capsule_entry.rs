//! Builds `Sidekiq::LimitFetch::CapsuleEntry` (lib/sidekiq/limit_fetch/
//! shapes.rb) from the core's `CapsuleEntry`, by keyword, as
//! beat_report.rs does and for the same reason.

use limit_fetch_core::CapsuleEntry;
use magnus::{Error, IntoValue, RClass, Ruby, Value};

use crate::helpers::{new_data, Pinned};

static CLASS: Pinned<RClass> = Pinned::new("CapsuleEntry");

pub fn init(namespace: RClass) -> Result<(), Error> {
    CLASS.init(namespace)
}

pub fn to_ruby(ruby: &Ruby, entry: CapsuleEntry) -> Result<Value, Error> {
    new_data(
        ruby,
        CLASS.get(ruby)?,
        &[
            ("uuid", entry.uuid.into_value_with(ruby)),
            ("info", entry.info.into_value_with(ruby)),
            (
                "heartbeat_left",
                entry
                    .heartbeat_left_ms
                    .map(|ms| ms as f64 / 1000.0)
                    .into_value_with(ruby),
            ),
        ],
    )
}
