//! Maps core errors to the Ruby exception classes defined in
//! lib/sidekiq/limit_fetch/errors.rb.
//!
//! The classes are looked up once, at load time, and pinned (see
//! `helpers::pinned`: compaction moved them once, and the first error a
//! compacted process raised segfaulted).

use std::any::Any;

use limit_fetch_core::Error as CoreError;
use magnus::{Error, ExceptionClass, RClass, Ruby};

use crate::helpers::Pinned;

static ERROR: Pinned<ExceptionClass> = Pinned::new("Error");
static CONNECTION: Pinned<ExceptionClass> = Pinned::new("ConnectionError");
static COMMAND: Pinned<ExceptionClass> = Pinned::new("CommandError");

pub fn init(namespace: RClass) -> Result<(), Error> {
    for class in [&ERROR, &CONNECTION, &COMMAND] {
        class.init(namespace)?;
    }
    Ok(())
}

fn class(ruby: &Ruby, pinned: &Pinned<ExceptionClass>) -> ExceptionClass {
    // Only before `init`, which runs when the extension loads.
    pinned
        .get(ruby)
        .unwrap_or_else(|_| ruby.exception_runtime_error())
}

pub fn to_ruby(ruby: &Ruby, err: CoreError) -> Error {
    let klass = match &err {
        CoreError::Connection(_) => class(ruby, &CONNECTION),
        CoreError::Command(_) | CoreError::Refused(_) => class(ruby, &COMMAND),
        CoreError::Invalid(_) => ruby.exception_arg_error(),
        CoreError::Interrupted => class(ruby, &ERROR),
    };
    Error::new(klass, err.to_string())
}

pub fn panic_error(ruby: &Ruby, panic: Box<dyn Any + Send>) -> Error {
    let detail = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    Error::new(
        class(ruby, &ERROR),
        format!("sidekiq-limit_fetch: internal error: {detail}"),
    )
}
