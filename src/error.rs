use std::fmt;

/// Everything that can go wrong in the core. Messages never contain
/// credentials: connection settings are not part of any error.
#[derive(Debug)]
pub enum Error {
    /// Redis could not be reached, or the connection broke or timed out.
    Connection(String),
    /// Redis answered with an error.
    Command(String),
    /// The caller's [`crate::Interrupt`] fired before the answer arrived.
    Interrupted,
    /// A value the caller gave is out of range.
    Invalid(String),
    /// The server, or its user, cannot run the gem (see acl.rs): the whole
    /// line, said at boot.
    Refused(String),
}

pub type Result<T> = std::result::Result<T, Error>;

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Connection(msg) => write!(f, "Redis connection error: {msg}"),
            Error::Command(msg) => write!(f, "Redis command error: {msg}"),
            Error::Interrupted => f.write_str("interrupted"),
            Error::Invalid(msg) | Error::Refused(msg) => f.write_str(msg),
        }
    }
}

impl std::error::Error for Error {}

impl From<redis::RedisError> for Error {
    fn from(err: redis::RedisError) -> Self {
        let io = err.is_io_error()
            || err.is_timeout()
            || err.is_connection_dropped()
            || err.is_connection_refusal()
            || err.is_unrecoverable_error();
        if io {
            Error::Connection(err.to_string())
        } else {
            // A denied command names the rule to add.
            Error::Command(crate::denial::explain(err.to_string()))
        }
    }
}
