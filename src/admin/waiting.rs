//! The jobs waiting in queues, parked ones included (waiting.lua): a job
//! parked at a full job limit or behind a rate goes back to its queue, so
//! it waits there as much as a job in Sidekiq's list does. What Sidekiq's
//! API, the metrics and the Web UI count as a queue's size and latency.

use std::sync::LazyLock;

use crate::runtime::wait_for;
use crate::script::{codes, LuaScript, WAITING};
use crate::{Interrupt, Result};

use super::Limits;

static WAITING_SCRIPT: LazyLock<LuaScript> = LazyLock::new(|| LuaScript::new(WAITING));

/// One queue's waiting jobs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueWaiting {
    pub name: String,
    /// Jobs in Sidekiq's list of the queue.
    pub queued: u64,
    /// Its jobs parked at their job limits (or behind their rates).
    pub parked: u64,
    /// The oldest payload of Sidekiq's list, when asked for.
    pub oldest_queued: Option<Vec<u8>>,
    /// Its oldest parked payload (by enqueue time), when asked for.
    pub oldest_parked: Option<Vec<u8>>,
}

/// What one read found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    /// Some limit's parked jobs were more than the budget left: they were
    /// counted for the queue of their oldest job.
    pub estimated: bool,
    pub queues: Vec<QueueWaiting>,
}

impl Limits {
    /// The waiting jobs of `queues` (none: of every queue with parked
    /// jobs), in one round trip, reading at most `budget` parked payloads
    /// whole (see waiting.lua for the cost); with `oldest`, also each
    /// queue's oldest payloads, for its latency.
    pub fn waiting<S: AsRef<str>>(
        &self,
        queues: &[S],
        budget: u64,
        oldest: bool,
        interrupt: &Interrupt,
    ) -> Result<Waiting> {
        let mut args: Vec<String> = vec![budget.to_string(), codes::flag(oldest).into()];
        args.extend(queues.iter().map(|q| q.as_ref().to_owned()));
        let redis = self.redis().clone();
        wait_for(interrupt, self.timeout(), async move {
            let mut conn = redis.conn().await?;
            let reply: Vec<redis::Value> = WAITING_SCRIPT
                .invoke(&mut conn, &[] as &[&str], &args[..])
                .await?;
            decode(reply)
        })
    }
}

/// waiting.lua's reply: a flag, then five fields per queue.
fn decode(reply: Vec<redis::Value>) -> Result<Waiting> {
    let mut fields = reply.into_iter();
    let estimated: i64 =
        redis::from_owned_redis_value(fields.next().unwrap_or(redis::Value::Int(0)))?;
    let rest: Vec<redis::Value> = fields.collect();
    let queues = rest
        .chunks(5)
        .map(|c| {
            let (name, queued, parked, oldest_queued, oldest_parked) =
                redis::from_redis_value(&redis::Value::Array(c.to_vec()))?;
            Ok(QueueWaiting {
                name,
                queued,
                parked,
                oldest_queued,
                oldest_parked,
            })
        })
        .collect::<redis::RedisResult<_>>()?;
    Ok(Waiting {
        estimated: estimated == 1,
        queues,
    })
}
