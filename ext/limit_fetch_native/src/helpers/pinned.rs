//! Ruby constants (classes) the binding keeps across calls.
//!
//! Looked up once, when the extension loads, and kept in statics. A Ruby
//! object that Rust keeps beyond one call must be marked or pinned:
//! constants keep the classes alive, but compaction (`GC.compact`,
//! `GC.auto_compact`, Sidekiq's `Process.warmup`) would move them and leave
//! the static pointing at whatever took their place (it did: the first error
//! a compacted process raised segfaulted). `register_mark_object` both keeps
//! and pins them.

use std::sync::OnceLock;

use magnus::value::{Opaque, ReprValue};
use magnus::{gc, Error, Module, RClass, Ruby, TryConvert};

pub struct Pinned<T: ReprValue> {
    /// Relative to `Sidekiq::LimitFetch`, such as `"BeatReport::Reaped"`.
    path: &'static str,
    value: OnceLock<Opaque<T>>,
}

impl<T: ReprValue + TryConvert> Pinned<T> {
    pub const fn new(path: &'static str) -> Self {
        Self {
            path,
            value: OnceLock::new(),
        }
    }

    /// Looks the constant up under `namespace` and pins it.
    pub fn init(&self, namespace: RClass) -> Result<(), Error> {
        let mut segments = self.path.split("::").peekable();
        let mut module = namespace;
        while let Some(name) = segments.next() {
            if segments.peek().is_some() {
                module = module.const_get(name)?;
            } else {
                let value: T = module.const_get(name)?;
                gc::register_mark_object(value);
                let _ = self.value.set(Opaque::from(value));
            }
        }
        Ok(())
    }

    pub fn get(&self, ruby: &Ruby) -> Result<T, Error> {
        match self.value.get() {
            Some(value) => Ok(ruby.get_inner(*value)),
            // Only before `init`, which runs when the extension loads.
            None => Err(Error::new(
                ruby.exception_runtime_error(),
                format!(
                    "sidekiq-limit_fetch: Sidekiq::LimitFetch::{} used before the extension loaded",
                    self.path
                ),
            )),
        }
    }
}
