//! Builds `Sidekiq::LimitFetch::QueueState` (lib/sidekiq/limit_fetch/
//! shapes.rb) from the core's `QueueState`, by keyword, as
//! beat_report.rs does and for the same reason.

use limit_fetch_core::{Adaptive, Pause, QueueState};
use magnus::{prelude::*, Error, IntoValue, RClass, Ruby, Value};

use crate::helpers::{new_data, Pinned};

static CLASS: Pinned<RClass> = Pinned::new("QueueState");

pub fn init(namespace: RClass) -> Result<(), Error> {
    CLASS.init(namespace)
}

/// A rate, or nil.
pub fn optional_rate(ruby: &Ruby, rate: Option<limit_fetch_core::Rate>) -> Result<Value, Error> {
    match rate {
        Some(rate) => crate::rate::to_ruby(ruby, rate),
        None => Ok(ruby.qnil().as_value()),
    }
}

/// An adaptive limit as `{value:, floor:, ceiling:}`, or nil.
fn adaptive(ruby: &Ruby, adaptive: Option<Adaptive>) -> Result<Value, Error> {
    let Some(a) = adaptive else {
        return Ok(ruby.qnil().as_value());
    };
    let hash = ruby.hash_new_capa(3);
    hash.aset(ruby.to_symbol("value"), a.value)?;
    hash.aset(ruby.to_symbol("floor"), a.floor)?;
    hash.aset(ruby.to_symbol("ceiling"), a.ceiling)?;
    Ok(hash.as_value())
}

pub fn to_ruby(ruby: &Ruby, state: QueueState) -> Result<Value, Error> {
    let busy = ruby.hash_new_capa(state.busy.len());
    for (uuid, count) in state.busy {
        busy.aset(uuid, count)?;
    }
    let (paused, pause_left) = match state.pause {
        Pause::None => (false, None),
        Pause::Indefinite => (true, None),
        Pause::For(left) => (true, Some(left.as_secs_f64())),
    };
    new_data(
        ruby,
        CLASS.get(ruby)?,
        &[
            ("name", state.name.into_value_with(ruby)),
            ("limit", state.limit.into_value_with(ruby)),
            ("process_limit", state.process_limit.into_value_with(ruby)),
            ("busy", busy.as_value()),
            ("queued", state.queued.into_value_with(ruby)),
            ("paused", paused.into_value_with(ruby)),
            ("pause_left", pause_left.into_value_with(ruby)),
            ("rate", optional_rate(ruby, state.rate)?),
            ("adaptive", adaptive(ruby, state.adaptive)?),
            ("fair", state.fair.into_value_with(ruby)),
        ],
    )
}
