//! Leased starts: a run of rated jobs (a job limit with a rate: a class's,
//! a key's) handed over without a script per job. The thread asks
//! lua/lease.lua, in the hand-over's own pipeline, before the `LMOVE`, for
//! k starts of the rate's window at once: Redis counts the window and
//! stamps the k' it grants at g + span (g: its clock at the grant; the
//! span a twentieth of the period, 50 ms at most). The thread then spends
//! them on the run's next jobs, one a hand-over, until none is left or the
//! span has passed, by its own monotonic clock, since it sent the request:
//! never later, by Redis's clock, than g + span, so that no start comes
//! after its stamp. A hand-over's job spends a start only if its reply came
//! before that (its `LMOVE` ran before); else the script decides it, and
//! counts its start as it counts any. Unspent starts stay counted, as if
//! they started (fewer may start, never more). Why no window then holds
//! more than the rate's limit: lua/lease.lua.
//!
//! k adapts to the room and to the thread: 1 at first, doubled while
//! grants come back full and are spent, up to [`MOST`]; a grant short of k
//! (the room is scarce) falls back to 1, so that near its limit a rate is
//! counted start by start, as the script counts it; a lease whose span
//! ended before it was spent asks next for what it spent (1 at least), so
//! that few starts counted go unused. Jobs parked behind the rate, or sent back for it and
//! not started, are the script's: their limit's parked list or count of
//! released jobs, read by every such hand-over, sends its job there.

use std::cell::RefCell;
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use redis::{Cmd, Value};

use crate::carried::CarriedLimit;
use crate::limits::MAX_LIMIT;
use crate::script::{LuaScript, LEASE};

/// The most starts one grant asks for.
const MOST: u64 = 16;

static LEASE_SCRIPT: LazyLock<LuaScript> = LazyLock::new(|| LuaScript::new(LEASE));

/// The starts a thread holds of a job limit's rate, for a capsule.
struct Lease {
    capsule: u64,
    id: String,
    granted: u64,
    left: u64,
    /// When the span ends, by this thread's clock.
    until: Instant,
    /// How many starts the next grant asks for.
    ask: u64,
}

thread_local! {
    static LEASES: RefCell<Vec<Lease>> = const { RefCell::new(Vec::new()) };
}

/// What a hand-over does of a rated limit's start.
pub(super) struct Spend {
    capsule: u64,
    /// The rated limit.
    pub(super) limit: CarriedLimit,
    /// How many starts its pipeline asks for, if it asks (no start held).
    pub(super) ask: Option<u64>,
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
        let ask = LEASES.with(|leases| {
            let leases = leases.borrow();
            match leases
                .iter()
                .find(|l| l.capsule == capsule && l.id == limit.id)
            {
                Some(l) if l.left > 0 && sent < l.until => None,
                // Its span ended first: as many as were spent in it.
                Some(l) if l.left > 0 => Some((l.granted - l.left).max(1)),
                Some(l) => Some(l.ask),
                None => Some(1),
            }
        });
        Some(Some(Spend {
            capsule,
            limit: limit.clone(),
            ask,
            sent,
        }))
    }

    /// The lease's call, for the pipeline (`uuid`: the capsule's).
    pub(super) fn call(&self, uuid: &str) -> Option<Cmd> {
        let (ask, rate) = (self.ask?, self.limit.rate.as_ref()?);
        let args = [
            &self.limit.id,
            &rate.limit,
            &rate.period,
            &ask.to_string(),
            uuid,
        ];
        Some(LEASE_SCRIPT.call(&args[..]))
    }

    /// Whether a start is held now to spend on the job whose reply is
    /// here (`grant`: the call's reply, if it asked): one granted or left,
    /// within the span since its request was sent.
    pub(super) fn covers(&self, grant: Option<&Value>) -> bool {
        let now = Instant::now();
        if let (Some(_), Some(reply)) = (self.ask, grant) {
            let (granted, span) = granted(reply);
            return granted > 0 && now < self.sent + span;
        }
        LEASES.with(|leases| {
            leases
                .borrow()
                .iter()
                .find(|l| l.capsule == self.capsule && l.id == self.limit.id)
                .is_some_and(|l| l.left > 0 && now < l.until)
        })
    }

    /// Notes the grant the call's reply says, if it asked, and spends one
    /// start of the lease if `spent` (its job was taken).
    pub(super) fn settle(&self, grant: Option<&Value>, spent: bool) {
        LEASES.with(|leases| {
            let mut leases = leases.borrow_mut();
            if let (Some(asked), Some(reply)) = (self.ask, grant) {
                let (granted, span) = granted(reply);
                let ask = match granted >= asked {
                    true => (asked * 2).min(MOST),
                    false => 1,
                };
                let lease = Lease {
                    capsule: self.capsule,
                    id: self.limit.id.clone(),
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

/// The starts and span a grant's reply says: none for anything else (an
/// error, the library lost: the script decides, and loads it).
fn granted(reply: &Value) -> (u64, Duration) {
    match reply {
        Value::Array(pair) => match pair.as_slice() {
            [Value::Int(granted), Value::Int(span)] => (
                u64::try_from(*granted).unwrap_or(0),
                Duration::from_micros(u64::try_from(*span).unwrap_or(0)),
            ),
            _ => (0, Duration::ZERO),
        },
        _ => (0, Duration::ZERO),
    }
}
