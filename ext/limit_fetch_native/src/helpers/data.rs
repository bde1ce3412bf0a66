//! Reading the Ruby side's `Data` objects, and building them.
//!
//! Ruby owns the shapes that cross the seam and checks what goes in once,
//! when it builds them (lib/sidekiq/limit_fetch/*.rb); the binding only
//! converts, by member name, and fails loudly on a type it cannot convert.

use std::time::Duration;

use magnus::value::ReprValue;
use magnus::{Class, Error, KwArgs, RClass, Ruby, TryConvert, Value};

/// Member `name` of `object`, an instance of `class`, converted.
pub fn field<T: TryConvert>(
    ruby: &Ruby,
    object: Value,
    class: RClass,
    name: &'static str,
) -> Result<T, Error> {
    object.funcall::<_, _, T>(name, ()).map_err(|err| {
        Error::new(
            ruby.exception_type_error(),
            format!("{}#{name}: {err}", class_name(class)),
        )
    })
}

/// Raises TypeError unless `object` is a `class`.
pub fn expect_instance(ruby: &Ruby, object: Value, class: RClass) -> Result<(), Error> {
    if object.is_kind_of(class) {
        return Ok(());
    }
    Err(Error::new(
        ruby.exception_type_error(),
        format!(
            "expected a {}, got a {}",
            class_name(class),
            class_name(object.class())
        ),
    ))
}

/// `class.new(**fields)`: by member name, so that a member renamed on one
/// side only fails at once, with Ruby's `missing keyword` error.
pub fn new_data(ruby: &Ruby, class: RClass, fields: &[(&str, Value)]) -> Result<Value, Error> {
    let kwargs = ruby.hash_new_capa(fields.len());
    for (name, value) in fields {
        kwargs.aset(ruby.to_symbol(name), *value)?;
    }
    class.funcall("new", (KwArgs(kwargs),))
}

/// A number of seconds as a Duration; only Ruby decides what is valid, but a
/// value no Duration holds (negative, NaN) raises rather than panics.
pub fn seconds(ruby: &Ruby, name: &str, value: f64) -> Result<Duration, Error> {
    Duration::try_from_secs_f64(value).map_err(|_| {
        Error::new(
            ruby.exception_arg_error(),
            format!("{name} must be a non-negative number of seconds, got {value}"),
        )
    })
}

fn class_name(class: RClass) -> String {
    // SAFETY: the name is copied at once, while the GVL is held.
    unsafe { class.name() }.into_owned()
}
