//! Lua scripts, sent by SHA with a fallback to the full body when Redis
//! has lost its script cache (restart, `SCRIPT FLUSH`).

use crate::connection::Conn;
use redis::{ErrorKind, FromRedisValue, ToRedisArgs};

use crate::Result;

pub(crate) struct LuaScript {
    body: &'static str,
    sha: String,
}

pub(crate) const FETCH: &str = include_str!("lua/fetch.lua");
pub(crate) const REAP: &str = include_str!("lua/reap.lua");
pub(crate) const RECONCILE: &str = include_str!("lua/reconcile.lua");
pub(crate) const REQUEUE: &str = include_str!("lua/requeue.lua");

impl LuaScript {
    pub(crate) fn new(body: &'static str) -> Self {
        let sha = redis::Script::new(body).get_hash().to_string();
        Self { body, sha }
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
}
