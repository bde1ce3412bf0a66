//! Builds `Sidekiq::LimitFetch::FairTenant` (lib/sidekiq/limit_fetch/
//! shapes.rb) from the core's `FairTenant`, by keyword, as
//! job_limit_state.rs does.

use limit_fetch_core::FairTenant;
use magnus::{Error, IntoValue, RClass, Ruby, Value};

use crate::helpers::{new_data, Pinned};

static CLASS: Pinned<RClass> = Pinned::new("FairTenant");

pub fn init(namespace: RClass) -> Result<(), Error> {
    CLASS.init(namespace)
}

pub fn to_ruby(ruby: &Ruby, tenant: FairTenant) -> Result<Value, Error> {
    new_data(
        ruby,
        CLASS.get(ruby)?,
        &[
            ("id", tenant.id.into_value_with(ruby)),
            ("running", tenant.running.into_value_with(ruby)),
            ("parked", tenant.parked.into_value_with(ruby)),
            ("weight", tenant.weight.into_value_with(ruby)),
        ],
    )
}
