//! Reads `Sidekiq::LimitFetch::RedisSettings` (lib/sidekiq/limit_fetch/
//! redis_settings.rb) into the core's `ConnectionSettings`. Ruby gives and
//! checks every field; nothing here falls back to a default.

use limit_fetch_core::ConnectionSettings;
use magnus::{Error, RClass, RString, Ruby, Value};

use crate::helpers::symbol_enum::TLS;
use crate::helpers::{field, seconds, Pinned};

static CLASS: Pinned<RClass> = Pinned::new("RedisSettings");

pub fn init(namespace: RClass) -> Result<(), Error> {
    CLASS.init(namespace)
}

pub fn from_ruby(ruby: &Ruby, settings: Value) -> Result<ConnectionSettings, Error> {
    let class = CLASS.get(ruby)?;
    crate::helpers::data::expect_instance(ruby, settings, class)?;
    let path: Option<String> = field(ruby, settings, class, "path")?;
    // A socket path wins over host and port, which Ruby then may leave nil:
    // the core never reads them.
    let (host, port) = match path {
        Some(_) => (String::new(), 0),
        None => (
            field(ruby, settings, class, "host")?,
            field(ruby, settings, class, "port")?,
        ),
    };
    // SAFETY: the bytes are copied while the GVL is held.
    let ca_certs = field::<Option<RString>>(ruby, settings, class, "ca_certs")?
        .map(|pem| unsafe { pem.as_slice() }.to_vec());
    let timeout: f64 = field(ruby, settings, class, "timeout")?;
    Ok(ConnectionSettings {
        host,
        port,
        path,
        db: field(ruby, settings, class, "db")?,
        username: field(ruby, settings, class, "username")?,
        password: field(ruby, settings, class, "password")?,
        tls: TLS.get(ruby, field(ruby, settings, class, "tls")?)?,
        ca_certs,
        timeout: seconds(ruby, "timeout", timeout)?,
    })
}
