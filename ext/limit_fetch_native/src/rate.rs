//! Builds `Sidekiq::LimitFetch::Rate` (lib/sidekiq/limit_fetch/shapes.rb)
//! from the core's `Rate`, by keyword, and reads one back (its members
//! checked by Ruby, Rates.coerce).

use std::time::Duration;

use limit_fetch_core::Rate;
use magnus::{Error, IntoValue, RClass, Ruby, Value};

use crate::helpers::data::expect_instance;
use crate::helpers::{field, new_data, seconds, Pinned};

static CLASS: Pinned<RClass> = Pinned::new("Rate");

pub fn init(namespace: RClass) -> Result<(), Error> {
    CLASS.init(namespace)
}

/// Its period in seconds: an Integer when whole, as Ruby writes it.
pub fn to_ruby(ruby: &Ruby, rate: Rate) -> Result<Value, Error> {
    let micros = rate.period.as_micros();
    let period = if micros.is_multiple_of(1_000_000) {
        u64::try_from(micros / 1_000_000)
            .unwrap_or(u64::MAX)
            .into_value_with(ruby)
    } else {
        rate.period.as_secs_f64().into_value_with(ruby)
    };
    new_data(
        ruby,
        CLASS.get(ruby)?,
        &[
            ("limit", rate.limit.into_value_with(ruby)),
            ("period", period),
        ],
    )
}

pub fn from_ruby(ruby: &Ruby, rate: Value) -> Result<Rate, Error> {
    let class = CLASS.get(ruby)?;
    expect_instance(ruby, rate, class)?;
    let period: f64 = field(ruby, rate, class, "period")?;
    Ok(Rate {
        limit: field(ruby, rate, class, "limit")?,
        period: round_to_micros(seconds(ruby, "period", period)?),
    })
}

/// As the fetch script rounds a period: to the nearest microsecond.
fn round_to_micros(period: Duration) -> Duration {
    Duration::from_micros(((period.as_nanos() + 500) / 1_000) as u64)
}
