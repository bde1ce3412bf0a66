//! Builds `Sidekiq::LimitFetch::RateWindow` (lib/sidekiq/limit_fetch/
//! shapes.rb) from the core's `RateWindow`, by keyword.

use limit_fetch_core::RateWindow;
use magnus::{Error, IntoValue, RClass, Ruby, Value};

use crate::helpers::{new_data, Pinned};

static CLASS: Pinned<RClass> = Pinned::new("RateWindow");

pub fn init(namespace: RClass) -> Result<(), Error> {
    CLASS.init(namespace)
}

pub fn to_ruby(ruby: &Ruby, window: RateWindow) -> Result<Value, Error> {
    let next = window.next_start_in.map(|d| d.as_secs_f64());
    new_data(
        ruby,
        CLASS.get(ruby)?,
        &[
            ("starts", window.starts.into_value_with(ruby)),
            ("next_start_in", next.into_value_with(ruby)),
        ],
    )
}
