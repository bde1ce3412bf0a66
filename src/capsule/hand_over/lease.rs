//! Leased starts: a run of rated jobs (a job limit with a rate: a class's,
//! a key's) handed over without a script per job. The thread asks
//! lua/lease.lua, in the hand-over's own pipeline, before the `LMOVE`, for
//! k starts of the rate's window at once: Redis counts the window and
//! stamps the k' it grants at g + span (g: its clock at the grant; the
//! span 3 ms a start granted, 5 ms at least, and a twentieth of the
//! period, 50 ms, at most: lua/prelude/rates.lua's `lease_span`). The
//! thread then spends them on the run's next jobs, one a hand-over, until
//! none is left or the span has passed, by its own monotonic clock, since
//! it sent the request: never later, by Redis's clock, than g + span, so
//! that no start comes after its stamp. A hand-over's job spends a start
//! only if its reply came before that (its `LMOVE` ran before); else the
//! script decides it, and counts its start as it counts any. Starts not
//! spent are given back: a lease whose span ended, by the next grant's
//! call; one whose hand-over left the job to the script, by a call ahead
//! of the script, in its request ([`abandon`]; jobs parked behind the rate
//! are then due at once, for the room). Until then they stay counted, as
//! if they started (fewer may start, never more). Members are the
//! capsule's and the thread's own (`<uuid>.<thread>#<n>:<stamp>`), so that
//! one gives back only its own. Why no window then holds more than the
//! rate's limit: lua/lease.lua.
//!
//! k adapts to the room and to the thread: 1 at first, doubled while
//! grants come back full and are spent, up to [`MOST`]; a grant short of k
//! falls back to 1; a lease whose span ended before it was spent asks next
//! for what it spent (1 at least), so that few starts counted go unused.
//!
//! A rate that binds, or nearly, is the script's, start by start, as if
//! there were no leases: when no lease is asked, hold.rs.
//!
//! Jobs parked behind the rate, or sent back for it and not started, are
//! the script's: their limit's parked list or count of released jobs, read
//! by every such hand-over, sends its job there.

use std::cell::RefCell;
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use redis::{Cmd, Value};

use crate::carried::CarriedLimit;
use crate::limits::MAX_LIMIT;
use crate::script::{LuaScript, LEASE};

use super::hold;

/// The most starts one grant asks for.
const MOST: u64 = 16;

static LEASE_SCRIPT: LazyLock<LuaScript> = LazyLock::new(|| LuaScript::new(LEASE));

/// The starts a thread holds of a job limit's rate, for a capsule.
struct Lease {
    capsule: u64,
    id: String,
    /// Their stamp (µs of Redis's clock, as its members name it).
    stamp: String,
    granted: u64,
    left: u64,
    /// When the span ends, by this thread's clock.
    until: Instant,
    /// How many starts the next grant asks for.
    ask: u64,
}

impl Lease {
    /// The numbers of its members not spent (`from`, `to`), with its
    /// stamp, if any.
    fn unspent(&self) -> Option<[String; 3]> {
        (self.left > 0).then(|| {
            let from = self.granted - self.left + 1;
            [
                self.stamp.clone(),
                from.to_string(),
                self.granted.to_string(),
            ]
        })
    }
}

thread_local! {
    static LEASES: RefCell<Vec<Lease>> = const { RefCell::new(Vec::new()) };
    /// This thread's part of its members' names.
    static THREAD: String = uuid::Uuid::new_v4().simple().to_string()[..8].to_owned();
}

/// The members' prefix of this thread's leases for capsule `uuid`.
fn who(uuid: &str) -> String {
    THREAD.with(|thread| format!("{uuid}.{thread}"))
}

/// What a hand-over does of a rated limit's start.
pub(super) struct Spend {
    capsule: u64,
    /// The rated limit.
    pub(super) limit: CarriedLimit,
    /// How many starts its pipeline asks for, if it asks (no start held).
    pub(super) ask: Option<u64>,
    /// The last lease's starts not spent, which its call gives back.
    give_back: Option<[String; 3]>,
    /// When its pipeline was built, just before it is sent.
    sent: Instant,
}

impl Spend {
    /// The start the hand-over of a run carrying `limits` spends: of its
    /// one rated limit, held or asked for. `None` where it carries more
    /// than one (the script counts them).
    pub(super) fn of(capsule: u64, limits: &[CarriedLimit]) -> Option<Option<Spend>> {
        let mut rated = limits.iter().filter(|l| l.rate.is_some());
        let Some(limit) = rated.next() else {
            return Some(None);
        };
        if rated.next().is_some() {
            return None;
        }
        let sent = Instant::now();
        if bare(limits) && hold::parked(capsule, sent) {
            return None;
        }
        let (ask, give_back): (Option<u64>, _) = LEASES.with(|leases| {
            let leases = leases.borrow();
            match leases.iter().find(|l| l.capsule == capsule) {
                Some(l) if l.id == limit.id && l.left > 0 && sent < l.until => (None, None),
                // Its span ended first: as many as were spent in it.
                Some(l) if l.id == limit.id && l.left > 0 => {
                    (Some((l.granted - l.left).max(1)), l.unspent())
                }
                Some(l) if l.id == limit.id => (Some(l.ask), None),
                Some(l) => (Some(1), l.unspent()),
                None => (Some(1), None),
            }
        });
        // A lease to ask of a limit held: the script (starts not spent
        // first go back with a grant's call, which it may refuse).
        if ask.is_some() && give_back.is_none() && hold::held(capsule, &limit.id, sent) {
            return None;
        }
        Some(Some(Spend {
            capsule,
            limit: limit.clone(),
            ask,
            give_back,
            sent,
        }))
    }

    /// The lease's call, for the pipeline (`uuid`: the capsule's).
    pub(super) fn call(&self, uuid: &str) -> Option<Cmd> {
        let (ask, rate) = (self.ask?, self.limit.rate.as_ref()?);
        let mut args = vec![
            self.limit.id.clone(),
            rate.limit.clone(),
            rate.period.clone(),
            ask.to_string(),
            who(uuid),
        ];
        args.extend(self.give_back.iter().flatten().cloned());
        Some(LEASE_SCRIPT.call(args))
    }

    /// Whether a start is held now to spend on the job whose reply is
    /// here (`grant`: the call's reply, if it asked): one granted or left,
    /// within the span since its request was sent.
    pub(super) fn covers(&self, grant: Option<&Value>) -> bool {
        let now = Instant::now();
        if let (Some(_), Some(reply)) = (self.ask, grant) {
            let grant = granted(reply);
            return grant.granted > 0 && now < self.sent + grant.span;
        }
        LEASES.with(|leases| {
            leases
                .borrow()
                .iter()
                .find(|l| l.capsule == self.capsule && l.id == self.limit.id)
                .is_some_and(|l| l.left > 0 && now < l.until)
        })
    }

    /// Notes whether its hand-over read parked rates (a bare rate's).
    pub(super) fn note_parked(&self, parked: bool) {
        if bare(std::slice::from_ref(&self.limit)) {
            hold::note_parked(self.capsule, parked);
        }
    }

    /// Notes the grant the call's reply says, if it asked, and spends one
    /// start of the lease if `spent` (its job was taken).
    pub(super) fn settle(&self, grant: Option<&Value>, spent: bool) {
        LEASES.with(|leases| {
            let mut leases = leases.borrow_mut();
            if let (Some(asked), Some(reply)) = (self.ask, grant) {
                let Grant {
                    granted,
                    span,
                    stamp,
                    hold,
                } = granted(reply);
                if !hold.is_zero() {
                    hold::hold(self.capsule, &self.limit.id, hold);
                }
                let ask = match granted >= asked {
                    true => (asked * 2).min(MOST),
                    false => 1,
                };
                let lease = Lease {
                    capsule: self.capsule,
                    id: self.limit.id.clone(),
                    stamp,
                    granted,
                    left: granted,
                    until: self.sent + span,
                    ask,
                };
                leases.retain(|l| l.capsule != self.capsule);
                leases.push(lease);
            }
            if !spent {
                return;
            }
            let held = leases
                .iter_mut()
                .find(|l| l.capsule == self.capsule && l.id == self.limit.id);
            if let Some(lease) = held {
                lease.left = lease.left.saturating_sub(1);
            }
        });
    }
}

/// Whether a run's `limits` are one rate and no concurrency (none
/// declared): its hand-over reads neither its busy list nor its parked
/// list. Its jobs are parked only behind its rate (or a back-off, noted
/// alike): then `rate_due` is set, and a stored concurrency is read; either
/// sends the job to the script. (Behind a rate of 0, unnoted, no start is
/// granted: a lease granted before it was stored overtakes them for its
/// span at most.)
pub(super) fn bare(limits: &[CarriedLimit]) -> bool {
    matches!(limits, [limit] if limit.rate.is_some() && limit.concurrency >= MAX_LIMIT)
}

/// The call that gives back the starts this thread leased for capsule
/// `id` (`uuid`) and did not spend, encoded, if any: for the request of
/// the script its hand-over left a job to (capsule/direct_look.rs), ahead
/// of it. The lease is done.
pub(in crate::capsule) fn abandon(id: u64, uuid: &str) -> Option<Vec<u8>> {
    let lease = LEASES.with(|leases| {
        let mut leases = leases.borrow_mut();
        let at = leases.iter().position(|l| l.capsule == id && l.left > 0)?;
        Some(leases.swap_remove(at))
    })?;
    let mut args = vec![
        lease.id.clone(),
        String::new(),
        String::new(),
        "0".into(),
        who(uuid),
    ];
    args.extend(lease.unspent().into_iter().flatten());
    let mut pipe = redis::pipe();
    pipe.add_command(LEASE_SCRIPT.call(args));
    Some(pipe.get_packed_pipeline())
}

/// What a grant's reply says (lua/lease.lua).
struct Grant {
    granted: u64,
    span: Duration,
    stamp: String,
    /// How long no lease of the limit is asked again.
    hold: Duration,
}

/// What a grant's reply says: none for anything else (an error, the
/// library lost: the script decides, and loads it).
fn granted(reply: &Value) -> Grant {
    let micros = |us: &i64| Duration::from_micros(u64::try_from(*us).unwrap_or(0));
    match reply {
        Value::Array(reply) => match reply.as_slice() {
            [Value::Int(granted), Value::Int(span), Value::BulkString(stamp), Value::Int(hold)] => {
                Grant {
                    granted: u64::try_from(*granted).unwrap_or(0),
                    span: micros(span),
                    stamp: String::from_utf8_lossy(stamp).into_owned(),
                    hold: micros(hold),
                }
            }
            _ => Grant::NONE,
        },
        _ => Grant::NONE,
    }
}

impl Grant {
    const NONE: Grant = Grant {
        granted: 0,
        span: Duration::ZERO,
        stamp: String::new(),
        hold: Duration::ZERO,
    };
}
