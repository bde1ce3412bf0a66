//! Maps core errors to the Ruby exception classes defined in
//! lib/sidekiq/limit_fetch/errors.rb.
//!
//! The classes are looked up once, at load time, and kept in a static. A
//! Ruby object that Rust keeps beyond one call must be marked or pinned:
//! constants keep the classes alive, but compaction (`GC.compact`,
//! `GC.auto_compact`, Sidekiq's `Process.warmup`) would move them and leave
//! the static pointing at whatever took their place.
//! `register_mark_object` both keeps and pins them.

use std::any::Any;
use std::sync::OnceLock;

use limit_fetch_core::Error as CoreError;
use magnus::value::Opaque;
use magnus::{gc, Error, ExceptionClass, Module, Ruby};

struct Classes {
    error: Opaque<ExceptionClass>,
    connection: Opaque<ExceptionClass>,
    command: Opaque<ExceptionClass>,
}

static CLASSES: OnceLock<Classes> = OnceLock::new();

pub fn init(namespace: impl Module) -> Result<(), Error> {
    let get = |name: &str| -> Result<Opaque<ExceptionClass>, Error> {
        let class: ExceptionClass = namespace.const_get(name)?;
        gc::register_mark_object(class);
        Ok(Opaque::from(class))
    };
    let classes = Classes {
        error: get("Error")?,
        connection: get("ConnectionError")?,
        command: get("CommandError")?,
    };
    let _ = CLASSES.set(classes);
    Ok(())
}

fn class(ruby: &Ruby, pick: impl Fn(&Classes) -> Opaque<ExceptionClass>) -> ExceptionClass {
    match CLASSES.get() {
        Some(classes) => ruby.get_inner(pick(classes)),
        // Only before `init`, which runs when the extension loads.
        None => ruby.exception_runtime_error(),
    }
}

pub fn to_ruby(ruby: &Ruby, err: CoreError) -> Error {
    let klass = match &err {
        CoreError::Connection(_) => class(ruby, |c| c.connection),
        CoreError::Command(_) => class(ruby, |c| c.command),
        CoreError::Invalid(_) => ruby.exception_arg_error(),
        CoreError::Interrupted => class(ruby, |c| c.error),
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
        class(ruby, |c| c.error),
        format!("sidekiq-limit_fetch: internal error: {detail}"),
    )
}
