//! The fetch script's protocol, the Rust side of the contract at the head of lua/fetch/: its
//! arguments, the modes the doorbell needs (ARGV[2]) and its reply.

use std::time::Instant;

use redis::{Cmd, Value};

use super::{codes, decode, LuaScript, Send, FETCH};
use crate::connection::Redis;
use crate::ledger::Ack;
use crate::Result;

mod look;

pub(crate) use look::Look;
pub use look::{Discarded, Fetched};

/// What the prelude's `job_limits` looks for first: a payload without it
/// carries no job limits.
const JOB_LIMITS_MARK: &[u8] = b"\"limit_fetch\":";

/// Whether a payload may carry job limits (the prelude's test, in Rust).
pub(crate) fn carries_job_limits(job: &[u8]) -> bool {
    job.windows(JOB_LIMITS_MARK.len())
        .any(|w| w == JOB_LIMITS_MARK)
}

/// What a hand-over left the fetch script to decide (lua/fetch/state.lua's
/// ARGV[5..10]): the queue it took from, whether its acknowledgement freed a
/// slot of that queue, the job it moved unchecked, if any, and where from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Handed {
    pub(crate) queue: String,
    /// Its acknowledgement freed a slot of `queue`, which passes to the script.
    pub(crate) slot_passed: bool,
    pub(crate) job: Option<Vec<u8>>,
    /// The acknowledged job, when it carries job limits whose slots were
    /// passed too.
    pub(crate) acked: Option<Vec<u8>>,
    /// The job limit whose parked jobs `job` was moved from, else its queue.
    pub(crate) from_limit: Option<String>,
    /// A keyed hand-over booked a slot of each of `job`'s limits, and
    /// freed those of `acked` itself (capsule/hand_over/keyed.rs).
    pub(crate) keyed: bool,
    /// The hand-over sent no acknowledgement: the look's ride on the script.
    pub(crate) acks_ride: bool,
}

/// What a fetch script does for the doorbell (lua/fetch/state.lua's ARGV[2]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Nobody sleeps on the doorbell: just fetch.
    Plain,
    /// On a thread's own connection while fetchers sleep: also report
    /// whether another job is eligible. Redis rings for its writes.
    Report,
    /// On the tracking connection while fetchers sleep: also read again
    /// what it writes, whose tracking its own writes end in silence.
    Watch,
    /// Arming the doorbell: read what fetches depend on, take nothing.
    Arm,
}

impl Mode {
    /// A look's mode: `watching`, a fetcher sleeps on the doorbell (see
    /// `Doorbell::watching`); `own_connection`, the look runs on the
    /// thread's own connection rather than the tracking one.
    pub(crate) fn of_look(watching: bool, own_connection: bool) -> Mode {
        match (watching, own_connection) {
            (false, _) => Mode::Plain,
            (true, true) => Mode::Report,
            (true, false) => Mode::Watch,
        }
    }

    /// The script's code for it (see `codes`).
    fn as_arg(self) -> &'static str {
        match self {
            Mode::Plain => codes::MODE_PLAIN,
            Mode::Watch => codes::MODE_WATCH,
            Mode::Report => codes::MODE_REPORT,
            Mode::Arm => codes::MODE_ARM,
        }
    }

    /// Commands sent before the script in the same request: tracking is
    /// OPTIN, so a script whose reads Redis should track follows `CLIENT
    /// CACHING yes`; arming turns tracking on first.
    fn before(self) -> Vec<Cmd> {
        let caching = || redis::cmd("CLIENT").arg("CACHING").arg("YES").clone();
        match self {
            Mode::Plain | Mode::Report => Vec::new(),
            Mode::Watch => vec![caching()],
            Mode::Arm => {
                let tracking = redis::cmd("CLIENT")
                    .arg(&["TRACKING", "ON", "OPTIN", "NOLOOP"])
                    .clone();
                vec![tracking, caching()]
            }
        }
    }
}

/// lua/fetch/, with its arguments built in one place.
pub(crate) struct FetchScript {
    script: LuaScript,
    /// How many jobs one run may set aside at most, as an argument.
    lookahead: Vec<u8>,
}

impl FetchScript {
    /// `lookahead`: how many jobs at a full job limit one run may set aside
    /// before it stops (at least 1).
    pub(crate) fn new(lookahead: u32) -> Self {
        Self {
            script: LuaScript::new(FETCH),
            lookahead: lookahead.max(1).to_string().into_bytes(),
        }
    }

    /// The script's arguments (see lua/fetch/state.lua's head).
    fn args(
        &self,
        uuid: &str,
        mode: Mode,
        acks: &[Ack],
        handed: Option<&Handed>,
        queues: &[String],
    ) -> Vec<Vec<u8>> {
        let mut args: Vec<Vec<u8>> = Vec::with_capacity(10 + acks.len() * 3 + queues.len());
        args.push(uuid.as_bytes().to_vec());
        args.push(mode.as_arg().as_bytes().to_vec());
        args.push(self.lookahead.clone());
        args.push(acks.len().to_string().into_bytes());
        match handed {
            Some(handed) => {
                args.push(handed.queue.as_bytes().to_vec());
                args.push(codes::flag(handed.slot_passed).as_bytes().to_vec());
                args.push(handed.job.clone().unwrap_or_default());
                args.push(handed.acked.clone().unwrap_or_default());
                args.push(handed.from_limit.clone().unwrap_or_default().into_bytes());
                args.push(codes::flag(handed.keyed).as_bytes().to_vec());
            }
            None => args.extend([
                Vec::new(),
                codes::NO.as_bytes().to_vec(),
                Vec::new(),
                Vec::new(),
                Vec::new(),
                codes::NO.as_bytes().to_vec(),
            ]),
        }
        for ack in acks {
            args.push(ack.queue.as_bytes().to_vec());
            args.push(ack.job.clone());
            args.push(ack.digest.hex().into_bytes());
        }
        args.extend(queues.iter().map(|q| q.as_bytes().to_vec()));
        args
    }

    /// The script as one encoded request, for a thread's own connection.
    pub(crate) fn packed(
        &self,
        send: Send,
        uuid: &str,
        mode: Mode,
        acks: &[Ack],
        handed: Option<&Handed>,
        queues: &[String],
    ) -> Vec<u8> {
        self.script
            .packed(send, &self.args(uuid, mode, acks, handed, queues))
    }

    /// Runs the script on the capsule's tracking connection. A `Plain` run
    /// that wrote tells the doorbell through the connection (see
    /// `Redis::writer`): it did not read again what it wrote. `Arm` fails
    /// on any error, a refused `CLIENT TRACKING` included; `Watch` keeps
    /// the script's reply when `CLIENT CACHING` failed (tracking was lost
    /// with a reconnection, which rang already).
    pub(crate) async fn call(
        &self,
        redis: &Redis,
        uuid: &str,
        mode: Mode,
        acks: &[Ack],
        handed: Option<&Handed>,
        queues: &[String],
    ) -> Result<Look> {
        let args = self.args(uuid, mode, acks, handed, queues);
        let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        let mut conn = redis.writer().await?;
        if matches!(mode, Mode::Watch | Mode::Arm) {
            // They read again what they write: Redis goes on tracking it.
            conn.wrote_nothing();
        }
        let keys: &[&str] = &[];
        let sent = Instant::now();
        let mut replies = self
            .script
            .call_after(&mut conn, &mode.before(), keys, &args[..])
            .await?;
        let reply = replies.pop().unwrap_or(Value::Nil);
        if mode == Mode::Arm {
            for reply in replies {
                decode::<()>(reply)?;
            }
            // `more`: an eligible queue holds a job.
            let (queued, opens, opens_at) = match reply {
                Value::Array(_) => decode::<(i64, Option<i64>, Option<i64>)>(reply)?,
                other => (decode::<Option<i64>>(other)?.unwrap_or(0), None, None),
            };
            return Ok(Look::armed(queued == 1, opens, opens_at, sent));
        }
        let look = Look::from_value(reply)?.sent_at(Some(sent));
        if look.wrote_nothing(acks) {
            conn.wrote_nothing();
        }
        Ok(look)
    }
}

#[cfg(test)]
mod tests {
    use super::{carries_job_limits, JOB_LIMITS_MARK};

    /// The prelude's `job_limits` looks for the same bytes first.
    #[test]
    fn the_mark_is_the_preludes() {
        let prelude = include_str!("../../lua/prelude/payloads.lua");
        let mark = std::str::from_utf8(JOB_LIMITS_MARK).unwrap();
        let find = format!("if not string.find(job, '{mark}', 1, true) then return nil end");
        assert!(
            prelude.contains(&find),
            "payloads.lua no longer has: {find}"
        );
        assert!(carries_job_limits(br#"{"limit_fetch":[],"queue":"q"}"#));
        assert!(!carries_job_limits(br#"{"class":"C","queue":"q"}"#));
    }
}
