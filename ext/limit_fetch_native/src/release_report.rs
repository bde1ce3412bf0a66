//! Builds `Sidekiq::LimitFetch::ReleaseReport` (lib/sidekiq/limit_fetch/
//! shapes.rb) from the core's `Released`, by keyword, as beat_report.rs
//! does and for the same reason.

use limit_fetch_core::Released;
use magnus::{Error, IntoValue, RClass, Ruby, Value};

use crate::capsule_entry;
use crate::helpers::{array_of, new_data, Pinned};

static CLASS: Pinned<RClass> = Pinned::new("ReleaseReport");

pub fn init(namespace: RClass) -> Result<(), Error> {
    CLASS.init(namespace)
}

pub fn to_ruby(ruby: &Ruby, released: Released) -> Result<Value, Error> {
    let live = array_of(ruby, released.live, capsule_entry::to_ruby)?;
    let queues = array_of(ruby, released.queues, |_, queue| {
        Ok((queue.queue, queue.parked, queue.recovered))
    })?;
    let dead = array_of(ruby, released.dead, |_, job| Ok(job))?;
    new_data(
        ruby,
        CLASS.get(ruby)?,
        &[
            ("live", live.into_value_with(ruby)),
            ("refused", released.refused.into_value_with(ruby)),
            ("queues", queues.into_value_with(ruby)),
            ("dead", dead.into_value_with(ruby)),
            ("capsules", released.capsules.into_value_with(ruby)),
            (
                "outage_left",
                released
                    .outage_left_ms
                    .map(|ms| ms as f64 / 1000.0)
                    .into_value_with(ruby),
            ),
        ],
    )
}
