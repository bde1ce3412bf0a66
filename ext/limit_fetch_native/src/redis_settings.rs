//! Reads `Sidekiq::LimitFetch::RedisSettings` (lib/sidekiq/limit_fetch/
//! shapes.rb, checked in redis_settings.rb) into the core's
//! `ConnectionSettings`. Ruby gives and checks every field; nothing here
//! falls back to a default.

use limit_fetch_core::{ConnectionSettings, SentinelSettings};
use magnus::{Error, RArray, RClass, RString, Ruby, Value};

use crate::helpers::symbol_enum::TLS;
use crate::helpers::{field, seconds, Pinned};

static CLASS: Pinned<RClass> = Pinned::new("RedisSettings");
static SENTINEL: Pinned<RClass> = Pinned::new("SentinelSettings");

pub fn init(namespace: RClass) -> Result<(), Error> {
    CLASS.init(namespace)?;
    SENTINEL.init(namespace)
}

pub fn from_ruby(ruby: &Ruby, settings: Value) -> Result<ConnectionSettings, Error> {
    let class = CLASS.get(ruby)?;
    crate::helpers::data::expect_instance(ruby, settings, class)?;
    let path: Option<String> = field(ruby, settings, class, "path")?;
    let sentinel: Option<Value> = field(ruby, settings, class, "sentinel")?;
    let sentinel = sentinel.map(|s| sentinel_from_ruby(ruby, s)).transpose()?;
    // A socket path, or sentinels, win over host and port, which Ruby then
    // may leave nil: the core never reads them.
    let (host, port) = match (&path, &sentinel) {
        (Some(_), _) | (_, Some(_)) => (String::new(), 0),
        (None, None) => (
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
        sentinel,
    })
}

/// A `SentinelSettings`: each sentinel is a `RedisSettings` of its own.
fn sentinel_from_ruby(ruby: &Ruby, sentinel: Value) -> Result<SentinelSettings, Error> {
    let class = SENTINEL.get(ruby)?;
    crate::helpers::data::expect_instance(ruby, sentinel, class)?;
    let list: RArray = field(ruby, sentinel, class, "sentinels")?;
    let sentinels = list
        .into_iter()
        .map(|s| from_ruby(ruby, s))
        .collect::<Result<Vec<_>, Error>>()?;
    Ok(SentinelSettings {
        master_name: field(ruby, sentinel, class, "master_name")?,
        sentinels,
    })
}
