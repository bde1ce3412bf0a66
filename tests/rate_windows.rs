//! A rate's window, as the scripts read and record it (lua/prelude/rates.lua
//! and rate_shapes.lua: `rate_room`, `record_start`), over random arrival
//! times on a real Redis: each arrival is a call of its own at a time of
//! the test's choosing (the call's clock set), started if its window has
//! room, and every decision is held to a model of the rule (at most
//! `limit` starts in any window of `period`; a start at t counts until t +
//! period): started exactly when the starts before it within a period are
//! fewer than the limit, the room never more than the model's (the fetch's
//! cheaper count of a sorted set) and exactly the model's when pruned first
//! (a release's) or kept as a string (data format 2), and a full window's
//! opening when its oldest start that counts leaves it. Every sliding
//! window of the starts is checked on its own too. In data format 1, in
//! format 2, and across switches between them (and a limit that crosses
//! LEASE_SCARCE, which changes a window's shape in format 2) at random
//! points of a sequence, the model unchanged.

mod support;

use std::sync::Mutex;

use support::{eval_after_prelude, redis};

/// Arrivals per sequence, and sequences.
const ARRIVALS: usize = 1_500;
const SEQUENCES: u64 = 40;
/// rates.lua's: a set counted this many is pruned.
const PRUNE_EVERY: u64 = 128;
/// rates.lua's: a rate of this many starts or fewer is a string in format 2.
const LEASE_SCARCE: u64 = 64;
/// Redis's clock in microseconds, about now.
const EPOCH: u64 = 1_764_000_000_000_000;
const FORMAT_KEY: &str = "sidekiq:limit_fetch:format";

/// The data format is the server's: one sequence that sets it at a time.
static FORMAT: Mutex<()> = Mutex::new(());

/// Each arrival a call, of four arguments: its clock; the format it
/// switches to first ("0": none; since its millisecond); the rate's limit
/// and period. `new_call`, the window read (pruned first for every
/// `exact_every`-th, 0: never) and, with room, a start recorded. Returns
/// per arrival {room, opens or 0, starts in the set, stamps in the string
/// (-1: none)}.
const SIMULATE: &str = r"
local starts, exact_every = KEYS[1], tonumber(ARGV[1])
local out = {}
for i = 2, #ARGV, 4 do
  local t, format, rate = tonumber(ARGV[i]), ARGV[i + 1], {tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3])}
  if format ~= '0' then
    redis.call('SET', FORMAT_KEY, format .. ':' .. string.format('%.0f', math.floor(t / 1000)))
  end
  new_call()
  clock = t
  local k = (i + 2) / 4
  local room, opens = rate_room(starts, rate, exact_every > 0 and k % exact_every == 0)
  if room > 0 then record_start(starts, rate, 'who') end
  local held = unpack_string(redis.call('GET', stamps_of(starts)))
  out[#out + 1] = room
  out[#out + 1] = opens or 0
  out[#out + 1] = redis.call('ZCARD', starts)
  out[#out + 1] = held and held.stamps and #held.stamps or -1
end
return out
";

/// xorshift64*: the same sequences every run, no dependency.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// The model: starts that still count at `t`.
fn counting(started: &[u64], t: u64, period: u64) -> usize {
    started.iter().filter(|&&s| s + period > t).count()
}

/// The next arrival after `last`: bursts, gaps of a fraction of the
/// period (of about a limit's share of it, for a large limit), the moment
/// a start leaves the window (and the microsecond before), and long
/// pauses.
fn next_arrival(random: &mut Random, last: u64, started: &[u64], limit: u64, period: u64) -> u64 {
    let leaves = |back: usize| {
        let n = started.len();
        (n >= back && back > 0).then(|| started[n - back] + period)
    };
    let at = match random.below(10) {
        0..=3 => last + 1 + random.below(1_000),
        7 => leaves(limit as usize).unwrap_or(last + 1),
        8 => leaves(limit as usize).map_or(last + 1, |t| t - 1),
        _ if limit > 6 => last + 1 + random.below(period / limit),
        4..=6 => last + 1 + random.below(period),
        _ => last + period + random.below(2 * period),
    };
    at.max(last + 1)
}

/// How a sequence's format and limit go.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Plan {
    /// Format 1 throughout (no key: as before format 2).
    One,
    /// Format 2 throughout.
    Two,
    /// Switches between 1 and 2 at random points, and a limit that
    /// crosses LEASE_SCARCE at others.
    Switching,
}

/// A small limit or a large one (more than a set's count between two
/// prunes, rates.lua's PRUNE_EVERY; more than LEASE_SCARCE).
fn a_limit(random: &mut Random, large: bool) -> u64 {
    match (large, random.below(3)) {
        (true, _) => 129 + random.below(300),
        (false, 0) => 7 + random.below(LEASE_SCARCE - 6),
        (false, _) => 1 + random.below(6),
    }
}

/// One arrival: its time, the format it switches to (0: none), its limit.
struct Arrival {
    at: u64,
    switch: u64,
    limit: u64,
}

fn simulate(seed: u64, plan: Plan) {
    let _format = FORMAT.lock().unwrap_or_else(|e| e.into_inner());
    let _: () = redis::cmd("DEL")
        .arg(FORMAT_KEY)
        .query(&mut redis())
        .unwrap();
    let mut random = Random(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let large = random.below(4) == 0;
    let mut limit = a_limit(&mut random, large);
    let period = 100_000 + random.below(900_000);
    let exact_every = [0, 3, 7][random.below(3) as usize];
    let key = format!(
        "sidekiq:limit_fetch:limit:prop-{seed}-{}:starts",
        uuid::Uuid::new_v4()
    );
    let mut format = if plan == Plan::One { 1 } else { 2 };
    let mut model: Vec<u64> = Vec::new();
    let mut arrivals = Vec::with_capacity(ARRIVALS);
    let mut last = EPOCH;
    for i in 0..ARRIVALS {
        let mut switch = u64::from(i == 0 && plan != Plan::One) * 2;
        if plan == Plan::Switching && i > 0 {
            if random.below(60) == 0 {
                format = 3 - format;
                switch = format;
            }
            if random.below(120) == 0 {
                limit = a_limit(&mut random, limit <= LEASE_SCARCE);
            }
        }
        last = next_arrival(&mut random, last, &model, limit, period);
        arrivals.push(Arrival {
            at: last,
            switch,
            limit,
        });
        if (counting(&model, last, period) as u64) < limit {
            model.push(last);
        }
    }
    let mut args = vec![exact_every.to_string()];
    for a in &arrivals {
        args.extend([a.at, a.switch, a.limit, period].map(|n| n.to_string()));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out: Vec<i64> = eval_after_prelude(SIMULATE, &[&key], &args);
    let _: () = redis::cmd("DEL")
        .arg(FORMAT_KEY)
        .query(&mut redis())
        .unwrap();
    let case = format!("seed {seed}, {plan:?}: {period} µs, exact every {exact_every}");
    let mut started = Vec::new();
    let mut full = 0;
    let mut kept: Vec<u64> = Vec::new();
    let mut format = 1;
    for (i, (a, reply)) in arrivals.iter().zip(out.chunks(4)).enumerate() {
        let (t, limit) = (a.at, a.limit);
        if a.switch > 0 {
            format = a.switch;
        }
        let (room, opens, held) = (reply[0] as u64, reply[1] as u64, reply[2] as u64);
        let string = reply[3];
        let before = counting(&started, t, period) as u64;
        let exact = exact_every > 0 && (i + 1) % exact_every as usize == 0;
        let a_string = format == 2 && limit <= LEASE_SCARCE;
        let at = format!("{case}: arrival {i} at +{} µs, limit {limit}", t - EPOCH);
        assert_eq!(room > 0, before < limit, "{at}");
        assert!(room <= limit - before.min(limit), "{at}: room {room}");
        if exact || a_string {
            assert_eq!(room, limit - before.min(limit), "{at}: an exact count");
        }
        if room > 0 {
            started.push(t);
        } else {
            full += 1;
            // The oldest of the `limit` newest starts leaves the window then.
            let oldest = started[started.len() - limit as usize];
            assert_eq!(opens, oldest + period, "{at}: the opening");
        }
        match plan {
            Plan::One => {
                // Starts past their window are kept until the count reaches
                // the limit or a multiple of PRUNE_EVERY (a large limit's
                // set holds at most that many more than its window did
                // then), or a release.
                let n = kept.len() as u64;
                if exact || n >= limit || (n > 0 && n % PRUNE_EVERY == 0) {
                    kept.retain(|&s| s + period > t);
                }
                if room > 0 {
                    kept.push(t);
                }
                assert_eq!(held, kept.len() as u64, "{at}: starts kept");
                assert!(held <= limit, "{at}: {held} starts kept");
                assert_eq!(string, -1, "{at}: no string in format 1");
            }
            // A string holds the starts that counted at its last write, and
            // the set nothing (its starts moved in, once).
            Plan::Two if a_string => {
                assert_eq!(held, 0, "{at}: the set moved into the string");
                if room > 0 {
                    assert_eq!(string as u64, before + 1, "{at}: the string's stamps");
                }
            }
            Plan::Two => assert!(string <= 0, "{at}: a mark, or no string"),
            Plan::Switching => {}
        }
    }
    assert_eq!(started, model, "{case}");
    for (i, &later) in started.iter().enumerate() {
        let limit = arrivals
            .iter()
            .find(|a| a.at == later)
            .map_or(0, |a| a.limit);
        let within = started[..=i]
            .iter()
            .filter(|&&s| s + period > later)
            .count();
        assert!(
            within as u64 <= limit,
            "{case}: {within} starts within a period at {i}, limit {limit}"
        );
    }
    assert!(full > 0, "{case}: the window filled");
    let _: () = redis::cmd("DEL")
        .arg(&key)
        .arg(key.replace(":starts", ":stamps"))
        .query(&mut redis())
        .unwrap();
}

#[test]
fn a_windows_starts_over_random_arrivals_are_never_more_than_its_limit_and_exactly_what_it_allows()
{
    for seed in 1..=SEQUENCES {
        simulate(seed, Plan::One);
    }
}

#[test]
fn in_format_2_a_windows_starts_are_never_more_than_its_limit_and_exactly_what_it_allows() {
    for seed in 1..=SEQUENCES {
        simulate(seed, Plan::Two);
    }
}

#[test]
fn across_switches_of_format_and_of_shape_a_window_counts_every_start_that_still_counts() {
    for seed in 1..=2 * SEQUENCES {
        simulate(seed, Plan::Switching);
    }
}
