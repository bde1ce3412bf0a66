//! Lua scripts, run as the functions of one Redis function library (`FCALL`),
//! loaded again in the same request when Redis has lost it (a restart with
//! no persistence, `FUNCTION FLUSH`).
//!
//! Why functions rather than `EVALSHA`: a library's top level runs once, when
//! it is loaded, so the prelude's key builders and shared rules are defined
//! once, not at every call; `EVALSHA` ran them all again at every fetch,
//! which cost Redis about a fifth of the fetch's time. And Redis keeps a
//! library in its RDB and AOF files and sends it to replicas.

pub(crate) mod codes;
pub(crate) mod fetch;
mod library;

use redis::aio::ConnectionLike;
use redis::{Cmd, FromRedisValue, Pipeline, ToRedisArgs, Value};

use crate::connection::Conn;
use crate::Result;

pub(crate) use library::{
    ACL_CHECK, ACTIVE, BACK_OFF, FAIR_TENANTS, FETCH, FORMAT, LEASE, ORPHANS, REAP, RECONCILE,
    RELEASE, REQUEUE, RESUME, STRAY_QUEUES, UNPARK, WAITING,
};

/// The library's version ([`library::version`]), digested from its source
/// by the build script (src/build.rs): a process reads the scripts' text
/// only when Redis lacks the library and it loads it.
const LIBRARY_VERSION: &str = include!(concat!(env!("OUT_DIR"), "/library_version.rs"));

/// How a request calls its script.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Send {
    /// `FCALL`: the library as Redis has it.
    Call,
    /// `FUNCTION LOAD`, then `FCALL`: after [`lost_script`].
    Load,
}

impl Send {
    /// The replies its request gets, the script's last.
    pub(crate) fn replies(self) -> usize {
        match self {
            Send::Call => 1,
            Send::Load => 2,
        }
    }
}

/// True if `reply` is a `FUNCTION LOAD`'s that found the library there: a
/// client of the same release loaded it first, and the call that follows
/// runs it. Not an error.
pub(crate) fn loaded_already(reply: &Value) -> bool {
    matches!(reply, Value::ServerError(e)
        if e.details().is_some_and(|d| d.ends_with("already exists")))
}

/// True if `reply` says Redis does not have the library (`Function not
/// found`): the request goes again, once, with [`Send::Load`]. Every path
/// that runs a script (on the runtime's connection or a thread's own) asks
/// this.
pub(crate) fn lost_script(send: Send, reply: &Value) -> bool {
    send == Send::Call
        && matches!(reply, Value::ServerError(e)
            if e.details().is_some_and(|d| d.starts_with("Function not found")))
}

pub(crate) struct LuaScript {
    function: String,
}

impl LuaScript {
    /// `script`: one of [`FETCH`], [`REAP`], ...
    pub(crate) fn new(script: &str) -> Self {
        Self {
            function: library::function_name(script, LIBRARY_VERSION),
        }
    }

    /// The commands that run this script with `keys` and `args`, as `send`
    /// says.
    fn commands<K: ToRedisArgs, A: ToRedisArgs>(
        &self,
        send: Send,
        keys: &[K],
        args: A,
    ) -> Vec<Cmd> {
        let mut call = redis::cmd("FCALL");
        call.arg(&self.function).arg(keys.len()).arg(keys).arg(args);
        match send {
            Send::Call => vec![call],
            Send::Load => {
                let source = library::source(LIBRARY_VERSION);
                // No REPLACE: a library's name carries its source's digest,
                // so the one there is this one. When every fetcher of a
                // fleet finds it lost at once (a restart with no
                // persistence), the first load compiles it (about 4 ms of
                // Redis on the Intel VM) and each other finds its name
                // taken (about 6 µs, loaded_already), where REPLACE
                // compiled it again for each.
                let mut load = Cmd::with_capacity(3, source.len() + 20);
                load.arg("FUNCTION").arg("LOAD").arg(source);
                vec![load, call]
            }
        }
    }

    /// This script's call with no keys and `args`, as Redis has the
    /// library (a reply `Function not found` is the caller's to read: see
    /// [`lost_script`]), for a pipeline of other commands.
    pub(crate) fn call<A: ToRedisArgs>(&self, args: A) -> Cmd {
        let mut call = redis::cmd("FCALL");
        call.arg(&self.function).arg(0).arg(args);
        call
    }

    /// This script with no keys and `args`, encoded: for a connection driven
    /// by hand (see direct/), which asks [`lost_script`] of the reply and
    /// reads [`Send::replies`] replies.
    pub(crate) fn packed(&self, send: Send, args: &[Vec<u8>]) -> Vec<u8> {
        let mut pipe = Pipeline::new();
        for cmd in self.commands(send, &[] as &[&str], args) {
            pipe.add_command(cmd);
        }
        pipe.get_packed_pipeline()
    }

    /// Sends this script after `before` (other commands of the same
    /// request) and returns their replies and the script's, last.
    pub(crate) async fn call_after<K, A>(
        &self,
        conn: &mut Conn,
        before: &[Cmd],
        keys: &[K],
        args: A,
    ) -> Result<Vec<Value>>
    where
        K: ToRedisArgs,
        A: ToRedisArgs + Copy,
    {
        let request = |send| {
            let mut pipe = Pipeline::with_capacity(before.len() + 2);
            for cmd in before
                .iter()
                .cloned()
                .chain(self.commands(send, keys, args))
            {
                pipe.add_command(cmd);
            }
            pipe
        };
        let count = before.len() + 1;
        let replies = conn
            .req_packed_commands(&request(Send::Call), 0, count)
            .await?;
        if !replies.last().is_some_and(|r| lost_script(Send::Call, r)) {
            return Ok(replies);
        }
        let mut replies = conn
            .req_packed_commands(&request(Send::Load), 0, count + 1)
            .await?;
        // The load's reply: its name, or why Redis refused it (the ACL
        // lacks `function|load`), which the call's own error would hide.
        match replies.remove(before.len()) {
            reply if loaded_already(&reply) => {}
            Value::ServerError(err) => return Err(redis::RedisError::from(err).into()),
            _ => {}
        }
        Ok(replies)
    }

    /// Runs this script with `keys` and `args`.
    pub(crate) async fn invoke<T, K, A>(&self, conn: &mut Conn, keys: &[K], args: A) -> Result<T>
    where
        T: FromRedisValue,
        K: ToRedisArgs,
        A: ToRedisArgs + Copy,
    {
        let mut replies = self.call_after(conn, &[], keys, args).await?;
        decode(replies.pop().unwrap_or(Value::Nil))
    }
}

/// A script's reply, or the error Redis answered with.
pub(crate) fn decode<T: FromRedisValue>(reply: Value) -> Result<T> {
    if let Value::ServerError(err) = reply {
        return Err(redis::RedisError::from(err).into());
    }
    Ok(T::from_owned_redis_value(reply)?)
}

#[cfg(test)]
mod tests {
    use super::library::{
        function_name, version, FETCH_PARTS, PRELUDE, READ_ONLY, SCRIPTS, VERSION,
    };
    use super::LIBRARY_VERSION;

    /// Each file of a folder of parts is joined, once: a file added to the
    /// folder and not to its list in `parts.rs` fails here.
    #[test]
    fn every_part_is_joined_once() {
        for (folder, parts) in [("prelude", &PRELUDE[..]), ("fetch", &FETCH_PARTS[..])] {
            let dir = format!("{}/src/lua/{folder}", env!("CARGO_MANIFEST_DIR"));
            let mut files = 0;
            for entry in std::fs::read_dir(&dir).expect("the folder of parts") {
                let path = entry.expect("an entry").path();
                if path.extension().is_some_and(|e| e == "lua") {
                    files += 1;
                    let text = std::fs::read_to_string(&path).expect("a part");
                    let joined = parts.iter().filter(|part| **part == text).count();
                    assert_eq!(joined, 1, "{} is joined {joined} times", path.display());
                }
            }
            assert_eq!(files, parts.len(), "src/lua/{folder}/: files and parts");
        }
    }

    /// The library as it was first built, joined and then given its
    /// version: the same bytes, so the same version (the functions' names),
    /// the build script's; the source loaded is those lines, with comments
    /// alone on theirs left empty.
    #[test]
    fn the_library_is_its_scripts_joined_with_their_version() {
        let prelude = PRELUDE.join("\n");
        let mut source = format!("#!lua name=limit_fetch_{VERSION}\n{prelude}");
        for (name, parts) in SCRIPTS {
            let body = parts.join("\n");
            let function = function_name(name, VERSION);
            let callback = "function(KEYS, ARGV)\nnew_call()\nreturn run(KEYS, ARGV)\nend";
            let register = if READ_ONLY.contains(&name) {
                format!(
                    "redis.register_function{{function_name = '{function}', \
                     flags = {{'no-writes'}}, callback = {callback}}}"
                )
            } else {
                format!("redis.register_function('{function}', {callback})")
            };
            source.push_str(&format!(
                "\ndo\nlocal run = (function()\n{body}\nend)()\n{register}\nend\n"
            ));
        }
        let digest = redis::Script::new(&source).get_hash()[..16].to_string();
        assert_eq!(version(), digest);
        assert_eq!(LIBRARY_VERSION, digest, "the build script's version");
        let loaded = source.replace(VERSION, &digest);
        let built = super::library::source(&digest);
        assert_eq!(built.capacity(), built.len());
        assert_eq!(built.lines().count(), loaded.lines().count());
        for (built, line) in built.lines().zip(loaded.lines()) {
            let comment = line.trim_start().starts_with("--");
            assert_eq!(built, if comment { "" } else { line });
        }
    }

    /// The fetch's last part returns the function Redis calls.
    #[test]
    fn the_fetch_ends_with_its_function() {
        let last = FETCH_PARTS.last().expect("a part");
        assert!(last.contains("\nreturn function(KEYS, ARGV)\n"));
    }
}
