//! Builds `Sidekiq::LimitFetch::FairTenant` and `FairClass` (lib/sidekiq/
//! limit_fetch/shapes.rb) from the core's, by keyword, as
//! job_limit_state.rs does.

use limit_fetch_core::{FairClass, FairTenant};
use magnus::{Error, IntoValue, RClass, Ruby, Value};

use crate::helpers::{array_of, new_data, Pinned};

static CLASS: Pinned<RClass> = Pinned::new("FairTenant");
static FAIR_CLASS: Pinned<RClass> = Pinned::new("FairClass");

pub fn init(namespace: RClass) -> Result<(), Error> {
    CLASS.init(namespace)?;
    FAIR_CLASS.init(namespace)
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

pub fn class_to_ruby(ruby: &Ruby, class: FairClass) -> Result<Value, Error> {
    let tenants = array_of(ruby, class.tenants, to_ruby)?;
    new_data(
        ruby,
        FAIR_CLASS.get(ruby)?,
        &[
            ("id", class.id.into_value_with(ruby)),
            ("tenants", tenants.into_value_with(ruby)),
        ],
    )
}
