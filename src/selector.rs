//! Lua scripts, sent by SHA with a fallback to the full body when Redis
//! has lost its script cache (restart, `SCRIPT FLUSH`).

use redis::aio::ConnectionLike;
use redis::Value;

use crate::connection::Conn;
use redis::{ErrorKind, FromRedisValue, ToRedisArgs};

use crate::Result;

pub(crate) struct LuaScript {
    body: &'static str,
    sha: String,
}

/// A script's body: the prelude every script shares (key names and the rules
/// several scripts use), then the script's own file.
macro_rules! script {
    ($file:literal) => {
        concat!(
            include_str!("lua/prelude.lua"),
            include_str!(concat!("lua/", $file))
        )
    };
}

pub(crate) const FETCH: &str = script!("fetch.lua");
pub(crate) const REAP: &str = script!("reap.lua");
pub(crate) const RECONCILE: &str = script!("reconcile.lua");
pub(crate) const REQUEUE: &str = script!("requeue.lua");

impl LuaScript {
    pub(crate) fn new(body: &'static str) -> Self {
        let sha = redis::Script::new(body).get_hash().to_string();
        Self { body, sha }
    }

    /// `EVALSHA` of this script with no keys and `args`, encoded.
    pub(crate) fn packed_evalsha(&self, args: &[Vec<u8>]) -> Vec<u8> {
        redis::cmd("EVALSHA")
            .arg(&self.sha)
            .arg(0)
            .arg(args)
            .get_packed_command()
    }

    /// `EVAL` of this script's body: after `NOSCRIPT`.
    pub(crate) fn packed_eval(&self, args: &[Vec<u8>]) -> Vec<u8> {
        redis::cmd("EVAL")
            .arg(self.body)
            .arg(0)
            .arg(args)
            .get_packed_command()
    }

    pub(crate) async fn invoke<T, K, A>(&self, conn: &mut Conn, keys: &[K], args: A) -> Result<T>
    where
        T: FromRedisValue,
        K: ToRedisArgs,
        A: ToRedisArgs + Copy,
    {
        let sent = redis::cmd("EVALSHA")
            .arg(&self.sha)
            .arg(keys.len())
            .arg(keys)
            .arg(args)
            .query_async(conn)
            .await;
        match sent {
            Err(err) if err.kind() == ErrorKind::NoScriptError => Ok(redis::cmd("EVAL")
                .arg(self.body)
                .arg(keys.len())
                .arg(keys)
                .arg(args)
                .query_async(conn)
                .await?),
            other => Ok(other?),
        }
    }

    /// [`LuaScript::invoke`], preceded in the same request by `CLIENT
    /// CACHING yes`, so that Redis tracks the keys the script reads for the
    /// doorbell (tracking is OPTIN). An error of that first command (tracking
    /// was lost with a reconnection) does not cost the script's reply.
    pub(crate) async fn invoke_tracked<T, A>(&self, conn: &mut Conn, args: A) -> Result<T>
    where
        T: FromRedisValue,
        A: ToRedisArgs + Copy,
    {
        let request = |verb: &str, script: &str| {
            let mut pipe = redis::pipe();
            pipe.cmd("CLIENT").arg("CACHING").arg("YES");
            pipe.cmd(verb).arg(script).arg(0).arg(args);
            pipe
        };
        let mut reply = last(
            conn.req_packed_commands(&request("EVALSHA", &self.sha), 0, 2)
                .await?,
        );
        if matches!(&reply, Value::ServerError(e) if e.code() == "NOSCRIPT") {
            reply = last(
                conn.req_packed_commands(&request("EVAL", self.body), 0, 2)
                    .await?,
            );
        }
        if let Value::ServerError(err) = reply {
            return Err(redis::RedisError::from(err).into());
        }
        Ok(T::from_redis_value(&reply)?)
    }

    /// Turns `CLIENT TRACKING` on (OPTIN, NOLOOP) and runs this script
    /// after `CLIENT CACHING yes`, so that Redis tracks the keys it reads:
    /// one round trip. Any error, a refused `CLIENT TRACKING` included, fails.
    pub(crate) async fn invoke_arming<A>(&self, conn: &mut Conn, args: A) -> Result<()>
    where
        A: ToRedisArgs + Copy,
    {
        let request = |verb: &str, script: &str| {
            let mut pipe = redis::pipe();
            pipe.cmd("CLIENT")
                .arg(&["TRACKING", "ON", "OPTIN", "NOLOOP"]);
            pipe.cmd("CLIENT").arg("CACHING").arg("YES");
            pipe.cmd(verb).arg(script).arg(0).arg(args);
            pipe
        };
        let mut replies = conn
            .req_packed_commands(&request("EVALSHA", &self.sha), 0, 3)
            .await?;
        if matches!(replies.last(), Some(Value::ServerError(e)) if e.code() == "NOSCRIPT") {
            replies = conn
                .req_packed_commands(&request("EVAL", self.body), 0, 3)
                .await?;
        }
        match replies
            .into_iter()
            .find(|r| matches!(r, Value::ServerError(_)))
        {
            Some(Value::ServerError(err)) => Err(redis::RedisError::from(err).into()),
            _ => Ok(()),
        }
    }
}

fn last(mut replies: Vec<Value>) -> Value {
    replies.pop().unwrap_or(Value::Nil)
}
