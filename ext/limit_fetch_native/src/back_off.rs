//! Reads `Sidekiq::LimitFetch::BackOffRequest` and builds `BackedOff` and
//! `BackOffState` (lib/sidekiq/limit_fetch/shapes.rb): a back-off asked for
//! by a job or the console, what it did, and one in force.

use limit_fetch_core::{BackOff, BackOffState, BackedOff};
use magnus::{prelude::*, Error, IntoValue, RClass, Ruby, Value};

use crate::helpers::data::expect_instance;
use crate::helpers::{field, new_data, Pinned};

static REQUEST: Pinned<RClass> = Pinned::new("BackOffRequest");
static BACKED_OFF: Pinned<RClass> = Pinned::new("BackedOff");
static STATE: Pinned<RClass> = Pinned::new("BackOffState");

pub fn init(namespace: RClass) -> Result<(), Error> {
    REQUEST.init(namespace)?;
    BACKED_OFF.init(namespace)?;
    STATE.init(namespace)
}

/// A `BackOffRequest`, checked by Ruby (BackOffs).
pub fn from_ruby(ruby: &Ruby, request: Value) -> Result<BackOff, Error> {
    let class = REQUEST.get(ruby)?;
    expect_instance(ruby, request, class)?;
    Ok(BackOff {
        limit: field(ruby, request, class, "limit")?,
        carried: field(ruby, request, class, "carried")?,
        who: field(ruby, request, class, "who")?,
        jid: field(ruby, request, class, "jid")?,
        seconds: field(ruby, request, class, "seconds")?,
    })
}

pub fn backed_off(ruby: &Ruby, done: BackedOff) -> Result<Value, Error> {
    new_data(
        ruby,
        BACKED_OFF.get(ruby)?,
        &[
            ("ends_in", done.ends_in.as_secs_f64().into_value_with(ruby)),
            ("parked", done.parked.into_value_with(ruby)),
        ],
    )
}

/// A `BackOffState`, or nil.
pub fn state(ruby: &Ruby, state: Option<BackOffState>) -> Result<Value, Error> {
    let Some(state) = state else {
        return Ok(ruby.qnil().as_value());
    };
    new_data(
        ruby,
        STATE.get(ruby)?,
        &[
            ("left", state.left.as_secs_f64().into_value_with(ruby)),
            ("by", state.by.into_value_with(ruby)),
            ("jid", state.jid.into_value_with(ruby)),
        ],
    )
}
