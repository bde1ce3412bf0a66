//! Where and how to reach Redis, as Sidekiq's redis options say it: the
//! address (or the sentinels that know it), credentials, database, TLS and
//! timeout, and the redis-rs client they make. Read by both kinds of
//! connection (connection.rs, direct/) and by the sentinel follower.

use std::fmt;
use std::time::Duration;

use redis::{
    ConnectionAddr, ConnectionInfo, ProtocolVersion, RedisConnectionInfo, TlsCertificates,
};

use crate::{Error, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tls {
    Off,
    /// TLS with certificate and host name verification, against the
    /// system's CAs or [`ConnectionSettings::ca_certs`].
    Verify,
    /// TLS without verification (`ssl_params: { verify_mode: VERIFY_NONE }`).
    Insecure,
}

/// Where and how to reach Redis: the same fields as Sidekiq's redis options.
#[derive(Clone)]
pub struct ConnectionSettings {
    pub host: String,
    pub port: u16,
    /// A Unix socket path; wins over host and port.
    pub path: Option<String>,
    pub db: i64,
    pub username: Option<String>,
    pub password: Option<String>,
    pub tls: Tls,
    /// PEM certificates of the CAs that [`Tls::Verify`] trusts instead of
    /// the system's (Sidekiq's `ssl_params: { ca_file: ... }`).
    pub ca_certs: Option<Vec<u8>>,
    /// Connect and response timeout.
    pub timeout: Duration,
    /// The sentinels to ask where the master is, and the master's name: the
    /// host and port above are then not used (see sentinel.rs).
    pub sentinel: Option<SentinelSettings>,
}

impl Default for ConnectionSettings {
    fn default() -> Self {
        Self {
            host: "127.0.0.1".into(),
            port: 6379,
            path: None,
            db: 0,
            username: None,
            password: None,
            tls: Tls::Off,
            ca_certs: None,
            timeout: Duration::from_secs(3),
            sentinel: None,
        }
    }
}

// Hand-written so that a password can never reach a log line.
impl fmt::Debug for ConnectionSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectionSettings")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("path", &self.path)
            .field("db", &self.db)
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "REDACTED"))
            .field("tls", &self.tls)
            .field("ca_certs", &self.ca_certs.as_ref().map(Vec::len))
            .field("sentinel", &self.sentinel)
            .finish()
    }
}

impl ConnectionSettings {
    /// A client for these settings. Fails only on CA certificates that do
    /// not parse.
    pub(crate) fn client(&self, protocol: ProtocolVersion) -> Result<redis::Client> {
        let info = self.connection_info(protocol);
        if matches!(info.addr, ConnectionAddr::TcpTls { .. }) {
            // rustls needs its crypto provider chosen once per process; one
            // installed before, by anything in the process, is as good. Only
            // for TLS: a process that never speaks it never runs (and never
            // maps) the TLS code.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        match &self.ca_certs {
            Some(pem)
                if matches!(
                    info.addr,
                    ConnectionAddr::TcpTls {
                        insecure: false,
                        ..
                    }
                ) =>
            {
                let certs = TlsCertificates {
                    client_tls: None,
                    root_cert: Some(pem.clone()),
                };
                redis::Client::build_with_tls(info, certs).map_err(|e| {
                    Error::Invalid(format!("invalid TLS CA certificates (ca_file): {e}"))
                })
            }
            _ => Ok(redis::Client::open(info)?),
        }
    }

    fn connection_info(&self, protocol: ProtocolVersion) -> ConnectionInfo {
        let addr = match (&self.path, self.tls) {
            (Some(path), _) => ConnectionAddr::Unix(path.into()),
            (None, Tls::Off) => ConnectionAddr::Tcp(self.host.clone(), self.port),
            (None, tls) => ConnectionAddr::TcpTls {
                host: self.host.clone(),
                port: self.port,
                insecure: tls == Tls::Insecure,
                tls_params: None,
            },
        };
        ConnectionInfo {
            addr,
            redis: RedisConnectionInfo {
                db: self.db,
                username: self.username.clone(),
                password: self.password.clone(),
                protocol,
            },
        }
    }
}

/// Where the sentinels are and which master to ask them for: Sidekiq's
/// `sentinels:` and `name:` (redis-client's `SentinelConfig`).
#[derive(Clone, Debug)]
pub struct SentinelSettings {
    /// The master's name, as the sentinels monitor it.
    pub master_name: String,
    /// Each sentinel: host, port, its own username, password and TLS
    /// (`sentinel_username:`, `sentinel_password:`), CA certificates and
    /// timeout; `db`, `path` and `sentinel` are not used.
    pub sentinels: Vec<ConnectionSettings>,
}
