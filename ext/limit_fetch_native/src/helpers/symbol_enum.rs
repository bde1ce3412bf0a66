//! Rust enums that cross the seam as Ruby symbols. Each table is the one
//! definition, on the Rust side, of the symbols' names.

use limit_fetch_core::{LimitKind, RateOf, Tls};
use magnus::value::ReprValue;
use magnus::{Error, Ruby, Symbol, Value};

pub struct SymbolEnum<T: 'static> {
    /// What the symbol names, for error messages.
    what: &'static str,
    table: &'static [(&'static str, T)],
}

/// `Sidekiq::LimitFetch::Limits::KINDS`' values: a queue's two limits, and
/// a job limit (a class's) by id.
pub const LIMIT_KIND: SymbolEnum<LimitKind> = SymbolEnum {
    what: "limit kind",
    table: &[
        ("limit", LimitKind::Global),
        ("process_limit", LimitKind::Process),
        ("job_limit", LimitKind::Job),
    ],
};

/// Whose rate: a queue's, or a job limit's (by id).
pub const RATE_OF: SymbolEnum<RateOf> = SymbolEnum {
    what: "rate of",
    table: &[("queue", RateOf::Queue), ("job_limit", RateOf::Job)],
};

/// `Sidekiq::LimitFetch::RedisSettings::TLS_MODES`.
pub const TLS: SymbolEnum<Tls> = SymbolEnum {
    what: "tls mode",
    table: &[
        ("off", Tls::Off),
        ("verify", Tls::Verify),
        ("insecure", Tls::Insecure),
    ],
};

impl<T: Copy + PartialEq> SymbolEnum<T> {
    pub fn get(&self, ruby: &Ruby, value: Value) -> Result<T, Error> {
        if let Some(symbol) = Symbol::from_value(value) {
            let name = symbol.name()?;
            if let Some((_, found)) = self.table.iter().find(|(n, _)| *n == name) {
                return Ok(*found);
            }
        }
        Err(Error::new(
            ruby.exception_arg_error(),
            format!(
                "unknown {} {} (expected {})",
                self.what,
                value.inspect(),
                self.names()
            ),
        ))
    }

    pub fn symbol(&self, ruby: &Ruby, value: T) -> Result<Symbol, Error> {
        match self.table.iter().find(|(_, v)| *v == value) {
            Some((name, _)) => Ok(ruby.to_symbol(name)),
            None => Err(Error::new(
                ruby.exception_runtime_error(),
                format!("sidekiq-limit_fetch: a {} without a symbol", self.what),
            )),
        }
    }

    fn names(&self) -> String {
        let names: Vec<String> = self.table.iter().map(|(n, _)| format!(":{n}")).collect();
        names.join(" or ")
    }
}
