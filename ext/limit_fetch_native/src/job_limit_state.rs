//! Builds `Sidekiq::LimitFetch::JobLimitState` (lib/sidekiq/limit_fetch/
//! shapes.rb) from the core's `JobLimitState`, by keyword, as
//! beat_report.rs does and for the same reason.

use limit_fetch_core::JobLimitState;
use magnus::{Error, IntoValue, RClass, Ruby, Value};

use crate::helpers::{new_data, Pinned};

static CLASS: Pinned<RClass> = Pinned::new("JobLimitState");

pub fn init(namespace: RClass) -> Result<(), Error> {
    CLASS.init(namespace)
}

pub fn to_ruby(ruby: &Ruby, state: JobLimitState) -> Result<Value, Error> {
    new_data(
        ruby,
        CLASS.get(ruby)?,
        &[
            ("id", state.id.into_value_with(ruby)),
            ("stored", state.stored.into_value_with(ruby)),
            ("running", state.running.into_value_with(ruby)),
            ("parked", state.parked.into_value_with(ruby)),
            (
                "stored_rate",
                crate::queue_state::optional_rate(ruby, state.stored_rate)?,
            ),
            ("back_off", crate::back_off::state(ruby, state.back_off)?),
            ("adaptive", state.adaptive.into_value_with(ruby)),
        ],
    )
}
