//! When a thread asks no lease (lease.rs): what it remembers, per
//! capsule, of the rates it saw binding. Thread-local, as its leases are.
//!
//! A rate that binds, or nearly, is the script's, start by start, as if
//! there were no leases: a lease near the limit would be refused or short
//! the next time (a round trip wasted, the job to the script after it),
//! and its starts, stamped a span late, would hold the window shut that
//! much longer. So nothing is asked there (each rule a round trip saved):
//! - a grant that finds the window near its limit (past half of it, or
//!   within 64 starts, once k more are counted: `lease_scarce`) grants one
//!   start (the job moved in its own pipeline) or none, and says for how
//!   long the thread asks no lease of that limit (a period, 10 s at most:
//!   [`hold`]); as does one refused for jobs sent back for the rate;
//! - a fetch script that starts a job whose rate is near its limit, or
//!   has jobs sent back for it still to start or parked behind it, says
//!   its queue is left to the script (`left_to_script`): the thread's next
//!   fetch of it tries no hand-over, and that script's look says again;
//! - a bare rate's hand-over (lease.rs's `bare`) goes to the script while any
//!   rate has parked jobs (its `rate_due`): a thread whose hand-over read
//!   them, or whose fetch script's look said when a rate next lets jobs go
//!   ([`note_look`]), leaves a bare rate's run to the script a while
//!   ([`PARKED_PAUSE`]).

use std::cell::RefCell;
use std::time::{Duration, Instant};

/// The most limits a thread holds no lease of at once (many keys' runs).
const MOST_HELD: usize = 64;

/// How long a thread leaves a bare rate's run to the script once its
/// hand-over, or its fetch script's look, saw parked rates (which send its
/// job there): a round trip less a job while they last.
const PARKED_PAUSE: Duration = Duration::from_secs(1);

/// A limit whose window a grant found near its limit, or whose jobs sent
/// back for its rate wait (lua/lease.lua): no lease is asked of it on this
/// thread until then, and its run's jobs go to the script.
struct Hold {
    capsule: u64,
    id: String,
    until: Instant,
}

thread_local! {
    static HOLDS: RefCell<Vec<Hold>> = const { RefCell::new(Vec::new()) };
    /// When a bare rate's hand-over, or a fetch script's look, last saw
    /// parked rates, by capsule.
    static PARKED: RefCell<Vec<(u64, Instant)>> = const { RefCell::new(Vec::new()) };
}

/// Asks no lease of limit `id` for capsule `capsule` for `hold` from now.
pub(super) fn hold(capsule: u64, id: &str, hold: Duration) {
    HOLDS.with(|holds| {
        let mut holds = holds.borrow_mut();
        let now = Instant::now();
        holds.retain(|h| now < h.until && !(h.capsule == capsule && h.id == id));
        // The oldest forgotten first: a lease asked again is refused.
        if holds.len() >= MOST_HELD {
            holds.remove(0);
        }
        holds.push(Hold {
            capsule,
            id: id.to_owned(),
            until: now + hold,
        });
    });
}

/// Whether a lease of limit `id` is held for capsule `capsule` at `now`.
pub(super) fn held(capsule: u64, id: &str, now: Instant) -> bool {
    HOLDS.with(|holds| {
        holds
            .borrow()
            .iter()
            .any(|h| h.capsule == capsule && h.id == id && now < h.until)
    })
}

/// Notes whether rates hold jobs parked, as a hand-over or a fetch script
/// on this thread for `capsule` last read.
pub(super) fn note_parked(capsule: u64, parked: bool) {
    PARKED.with(|notes| {
        let mut notes = notes.borrow_mut();
        notes.retain(|(c, _)| *c != capsule);
        if parked {
            notes.push((capsule, Instant::now()));
        }
    });
}

/// Whether a bare rate's run is the script's for `capsule` at `now`: a
/// hand-over or a look on this thread saw parked rates lately.
pub(super) fn parked(capsule: u64, now: Instant) -> bool {
    PARKED.with(|parked| {
        parked
            .borrow()
            .iter()
            .any(|(c, at)| *c == capsule && now < *at + PARKED_PAUSE)
    })
}

/// Notes what a fetch script's look on this thread for `capsule` said:
/// one that says when a rate may next let jobs go (`opens`: the first
/// opening of the parked rates, or of a window, a back-off) says as a rule
/// that jobs are parked behind one (`rate_due` is set), which sends a bare
/// rate's hand-over to the script: its next ones are the script's a while,
/// as after a hand-over that read them.
pub(super) fn note_look(capsule: u64, opens: bool) {
    note_parked(capsule, opens);
}
