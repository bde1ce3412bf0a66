//! Lua scripts, sent by SHA with a fallback to the full body when Redis
//! has lost its script cache (restart, `SCRIPT FLUSH`).

pub(crate) mod fetch;

use redis::aio::ConnectionLike;
use redis::{Cmd, FromRedisValue, Pipeline, ToRedisArgs, Value};

use crate::connection::Conn;
use crate::Result;

/// A script's body: the prelude every script shares (key names and the rules
/// several scripts use), then the script's own file.
macro_rules! script {
    ($file:literal) => {
        concat!(
            include_str!("../lua/prelude.lua"),
            include_str!(concat!("../lua/", $file))
        )
    };
}

pub(crate) const FETCH: &str = script!("fetch.lua");
pub(crate) const REAP: &str = script!("reap.lua");
pub(crate) const RECONCILE: &str = script!("reconcile.lua");
pub(crate) const REQUEUE: &str = script!("requeue.lua");
pub(crate) const RELEASE: &str = script!("release.lua");

pub(crate) struct LuaScript {
    body: &'static str,
    sha: String,
}

/// How a request names its script.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Send {
    /// `EVALSHA`: the script as Redis has it cached.
    Sha,
    /// `EVAL` with the whole body: after [`lost_script`].
    Body,
}

/// True if `reply` says Redis lost the script sent by SHA (`NOSCRIPT`): the
/// request goes again, once, with [`Send::Body`]. Every path that runs a
/// script (on the runtime's connection or a thread's own) asks this.
pub(crate) fn lost_script(send: Send, reply: &Value) -> bool {
    send == Send::Sha && matches!(reply, Value::ServerError(e) if e.code() == "NOSCRIPT")
}

impl LuaScript {
    pub(crate) fn new(body: &'static str) -> Self {
        let sha = redis::Script::new(body).get_hash().to_string();
        Self { body, sha }
    }

    /// This script with `keys` and `args`, as `send` names it.
    fn command<K: ToRedisArgs, A: ToRedisArgs>(&self, send: Send, keys: &[K], args: A) -> Cmd {
        let (verb, script) = match send {
            Send::Sha => ("EVALSHA", self.sha.as_str()),
            Send::Body => ("EVAL", self.body),
        };
        let mut cmd = redis::cmd(verb);
        cmd.arg(script).arg(keys.len()).arg(keys).arg(args);
        cmd
    }

    /// This script with no keys and `args`, encoded: for a connection driven
    /// by hand (see direct/), which asks [`lost_script`] of the reply.
    pub(crate) fn packed(&self, send: Send, args: &[Vec<u8>]) -> Vec<u8> {
        self.command(send, &[] as &[&str], args)
            .get_packed_command()
    }

    /// Sends this script after `before` (other commands of the same
    /// request) and returns every reply, the script's last.
    pub(crate) async fn run_after<K, A>(
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
            let mut pipe = Pipeline::with_capacity(before.len() + 1);
            for cmd in before {
                pipe.add_command(cmd.clone());
            }
            pipe.add_command(self.command(send, keys, args));
            pipe
        };
        let count = before.len() + 1;
        let replies = conn
            .req_packed_commands(&request(Send::Sha), 0, count)
            .await?;
        if replies.last().is_some_and(|r| lost_script(Send::Sha, r)) {
            return Ok(conn
                .req_packed_commands(&request(Send::Body), 0, count)
                .await?);
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
        let mut replies = self.run_after(conn, &[], keys, args).await?;
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
