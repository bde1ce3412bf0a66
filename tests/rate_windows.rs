//! A rate's window, as the scripts read and record it (lua/prelude/rates.lua:
//! `rate_room`, `record_start`), over random arrival times on a real Redis:
//! each arrival is a call of its own at a time of the test's choosing (the
//! call's clock set), started if its window has room, and every decision
//! is held to a model of the rule (at most `limit` starts in any window of
//! `period`; a start at t counts until t + period): started exactly when
//! the starts before it within a period are fewer than the limit, the room
//! never more than the model's (the fetch's cheaper count) and exactly the
//! model's when pruned first (a release's), and a full window's opening
//! when its oldest start that counts leaves it. Every sliding window of the
//! starts is checked on its own too.

mod support;

use support::{eval_after_prelude, redis};

/// Arrivals per sequence, and sequences.
const ARRIVALS: usize = 1_500;
const SEQUENCES: u64 = 40;
/// rates.lua's: a set counted this many is pruned.
const PRUNE_EVERY: u64 = 128;
/// Redis's clock in microseconds, about now.
const EPOCH: u64 = 1_764_000_000_000_000;

/// Each arrival a call: `new_call`, its clock set, the window read (pruned
/// first for every `exact_every`-th, 0: never) and, with room, a start
/// recorded. Returns per arrival {room, opens or 0, starts in the set}.
const SIMULATE: &str = r"
local starts, rate, exact_every = KEYS[1], {tonumber(ARGV[1]), tonumber(ARGV[2])}, tonumber(ARGV[3])
local out = {}
for i = 4, #ARGV do
  new_call()
  clock = tonumber(ARGV[i])
  local room, opens = rate_room(starts, rate, exact_every > 0 and i % exact_every == 0)
  if room > 0 then record_start(starts, rate, 'who') end
  out[#out + 1] = room
  out[#out + 1] = opens or 0
  out[#out + 1] = redis.call('ZCARD', starts)
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

fn simulate(seed: u64) {
    let mut random = Random(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    // Small limits, and some larger than the set's count between two
    // prunes (rates.lua's PRUNE_EVERY).
    let limit = match random.below(4) {
        0 => 129 + random.below(300),
        _ => 1 + random.below(6),
    };
    let period = 100_000 + random.below(900_000);
    let exact_every = [0, 3, 7][random.below(3) as usize];
    let key = format!(
        "sidekiq:limit_fetch:limit:prop-{seed}-{}:starts",
        uuid::Uuid::new_v4()
    );
    let mut model: Vec<u64> = Vec::new();
    let mut arrivals = Vec::with_capacity(ARRIVALS);
    let mut last = EPOCH;
    for _ in 0..ARRIVALS {
        last = next_arrival(&mut random, last, &model, limit, period);
        arrivals.push(last);
        if (counting(&model, last, period) as u64) < limit {
            model.push(last);
        }
    }
    let mut args = vec![
        limit.to_string(),
        period.to_string(),
        exact_every.to_string(),
    ];
    args.extend(arrivals.iter().map(u64::to_string));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out: Vec<i64> = eval_after_prelude(SIMULATE, &[&key], &args);
    let case = format!("seed {seed}: {limit} per {period} µs, exact every {exact_every}");
    let mut started = Vec::new();
    let mut full = 0;
    let mut kept: Vec<u64> = Vec::new();
    for (i, (&t, reply)) in arrivals.iter().zip(out.chunks(3)).enumerate() {
        let (room, opens, held) = (reply[0] as u64, reply[1] as u64, reply[2] as u64);
        let before = counting(&started, t, period) as u64;
        let exact = exact_every > 0 && (i + 4) % exact_every as usize == 0;
        assert_eq!(
            room > 0,
            before < limit,
            "{case}: arrival {i} at +{} µs",
            t - EPOCH
        );
        assert!(
            room <= limit - before.min(limit),
            "{case}: room {room} at {i}"
        );
        if exact {
            assert_eq!(
                room,
                limit - before.min(limit),
                "{case}: a pruned count at {i}"
            );
        }
        if room > 0 {
            started.push(t);
        } else {
            full += 1;
            // The oldest of the `limit` newest starts leaves the window then.
            let oldest = started[started.len() - limit as usize];
            assert_eq!(opens, oldest + period, "{case}: the opening at {i}");
        }
        // Starts past their window are kept until the count reaches the
        // limit or a multiple of PRUNE_EVERY (a large limit's set holds at
        // most that many more than its window did then), or a release.
        let n = kept.len() as u64;
        if exact || n >= limit || (n > 0 && n % PRUNE_EVERY == 0) {
            kept.retain(|&s| s + period > t);
        }
        if room > 0 {
            kept.push(t);
        }
        assert_eq!(held, kept.len() as u64, "{case}: starts kept at {i}");
        assert!(held <= limit, "{case}: {held} starts kept at {i}");
    }
    assert_eq!(started, model, "{case}");
    for (i, later) in started.iter().enumerate().skip(limit as usize) {
        assert!(
            later - started[i - limit as usize] >= period,
            "{case}: {} starts within a period",
            limit + 1
        );
    }
    assert!(full > 0, "{case}: the window filled");
    let _: () = redis::cmd("DEL").arg(&key).query(&mut redis()).unwrap();
}

#[test]
fn a_windows_starts_over_random_arrivals_are_never_more_than_its_limit_and_exactly_what_it_allows()
{
    for seed in 1..=SEQUENCES {
        simulate(seed);
    }
}
