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

use std::sync::LazyLock;

use redis::aio::ConnectionLike;
use redis::{Cmd, FromRedisValue, Pipeline, ToRedisArgs, Value};

use crate::connection::Conn;
use crate::Result;

/// The prelude every function shares (key names and the rules several
/// scripts use), run once when the library loads: the files of
/// `src/lua/prelude/`, joined in this order.
const PRELUDE: [&str; 15] = include!("../lua/prelude/parts.rs");

/// The fetch script: the files of `src/lua/fetch/`, joined in this order.
const FETCH_PARTS: [&str; 13] = include!("../lua/fetch/parts.rs");

/// Each script: its name in the library and its files, joined in order
/// into a chunk that runs once, when the library loads, and returns the
/// function of `(KEYS, ARGV)` that Redis calls (what it defines before, it
/// defines once).
const SCRIPTS: [(&str, &[&str]); 14] = [
    (FETCH, &FETCH_PARTS),
    (REAP, &[include_str!("../lua/reap.lua")]),
    (RECONCILE, &[include_str!("../lua/reconcile.lua")]),
    (REQUEUE, &[include_str!("../lua/requeue.lua")]),
    (RELEASE, &[include_str!("../lua/release.lua")]),
    (ORPHANS, &[include_str!("../lua/orphans.lua")]),
    (STRAY_QUEUES, &[include_str!("../lua/stray_queues.lua")]),
    (ACTIVE, &[include_str!("../lua/active.lua")]),
    (UNPARK, &[include_str!("../lua/unpark.lua")]),
    (ACL_CHECK, &[include_str!("../lua/acl_check.lua")]),
    (WAITING, &[include_str!("../lua/waiting.lua")]),
    (BACK_OFF, &[include_str!("../lua/back_off.lua")]),
    (RESUME, &[include_str!("../lua/resume.lua")]),
    (FAIR_TENANTS, &[include_str!("../lua/fair_tenants.lua")]),
];

pub(crate) const FETCH: &str = "fetch";
pub(crate) const REAP: &str = "reap";
pub(crate) const RECONCILE: &str = "reconcile";
pub(crate) const REQUEUE: &str = "requeue";
pub(crate) const RELEASE: &str = "release";
pub(crate) const ORPHANS: &str = "orphans";
pub(crate) const STRAY_QUEUES: &str = "stray_queues";
pub(crate) const ACTIVE: &str = "active";
pub(crate) const UNPARK: &str = "unpark";
pub(crate) const ACL_CHECK: &str = "acl_check";
pub(crate) const WAITING: &str = "waiting";
pub(crate) const BACK_OFF: &str = "back_off";
pub(crate) const RESUME: &str = "resume";
pub(crate) const FAIR_TENANTS: &str = "fair_tenants";

/// What stands for the library's version in its source.
const VERSION: &str = "{version}";

/// The library's source and version. Function names are global in Redis,
/// so the library and each function carry the version, a digest of the
/// source: processes of two releases of the gem share a Redis during a
/// deploy, each calling its own functions.
struct Library {
    source: String,
    version: String,
}

/// The scripts that write nothing, registered `no-writes`: Redis runs them
/// where it refuses writes (over `maxmemory`, as Sidekiq's own reads of
/// its lists still run), so that Sidekiq's API keeps its figures then.
const READ_ONLY: [&str; 2] = [WAITING, FAIR_TENANTS];

static LIBRARY: LazyLock<Library> = LazyLock::new(|| {
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
    let version = redis::Script::new(&source).get_hash()[..16].to_string();
    Library {
        source: source.replace(VERSION, &version),
        version,
    }
});

fn function_name(script: &str, version: &str) -> String {
    format!("limit_fetch_{script}_{version}")
}

/// How a request calls its script.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Send {
    /// `FCALL`: the library as Redis has it.
    Call,
    /// `FUNCTION LOAD REPLACE`, then `FCALL`: after [`lost_script`].
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
            function: function_name(script, &LIBRARY.version),
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
                let mut load = redis::cmd("FUNCTION");
                load.arg("LOAD").arg("REPLACE").arg(&LIBRARY.source);
                vec![load, call]
            }
        }
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
        if let Value::ServerError(err) = replies.remove(before.len()) {
            return Err(redis::RedisError::from(err).into());
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
    use super::{FETCH_PARTS, PRELUDE};

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

    /// The fetch's last part returns the function Redis calls.
    #[test]
    fn the_fetch_ends_with_its_function() {
        let last = FETCH_PARTS.last().expect("a part");
        assert!(last.contains("\nreturn function(KEYS, ARGV)\n"));
    }
}
