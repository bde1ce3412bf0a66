//! The job limits a payload carries, read by the core only where the
//! hand-over (capsule/hand_over/) may pass their slots from one job to
//! the next without the fetch script.
//!
//! The client middleware writes the field first, then the queue:
//! `{"limit_fetch":[{"id":"class:Sync","concurrency":3}],"queue":"default",...`
//! (spec/fixtures/job_limit_payloads.json). Only that plain shape is read
//! here: ids and queue names without quote or backslash, a concurrency of
//! decimal digits, an optional `"rate":[limit,period]` (digits, and digits
//! with an optional fraction; without a concurrency, a rate's limit has
//! none: [`MAX_LIMIT`]), an optional `"discard":true`. Anything else (a
//! range, an escape, another order) reads as `None`, and the script, whose reading
//! is the rule (lua/prelude/payloads.lua's `job_limits`), decides. So this reader can
//! only make the hand-over rarer, never read a limit differently: two jobs
//! whose [`Carried::head`] bytes are equal carry the same limits to the
//! script too.

use crate::limits::MAX_LIMIT;

const FIRST: &[u8] = b"{\"limit_fetch\":[";

/// One job limit of a payload: its id, the concurrency it declares, and
/// its declared rate, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CarriedLimit {
    pub id: String,
    pub concurrency: u64,
    pub rate: Option<DeclaredRate>,
}

/// A rate as a payload declares it: its limit and its period (seconds),
/// the text the payload carries, which the scripts read (values.lua's
/// `declared_rate`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclaredRate {
    pub limit: String,
    pub period: String,
}

/// What the head of a payload carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Carried {
    /// The payload's bytes up to the end of its queue's name: the limits
    /// and the queue. Jobs with equal heads share both.
    pub head: Vec<u8>,
    pub limits: Vec<CarriedLimit>,
}

impl Carried {
    /// The limits and queue at the head of `job`, if it has the plain
    /// shape above and carries at least one limit.
    pub fn read(job: &[u8]) -> Option<Carried> {
        let mut at = FIRST.len();
        if !job.starts_with(FIRST) {
            return None;
        }
        let mut limits = Vec::new();
        loop {
            let (limit, next) = limit_at(job, at)?;
            limits.push(limit);
            at = next;
            match job.get(at)? {
                b',' => at += 1,
                b']' => break,
                _ => return None,
            }
        }
        let rest = job.get(at + 1..)?.strip_prefix(b",\"queue\":\"")?;
        let name = plain_string(rest)?;
        let end = job.len() - rest.len() + name.len() + 1;
        Some(Carried {
            head: job[..end].to_vec(),
            limits,
        })
    }
}

/// `{"id":"...","concurrency":N}`, its concurrency or (not both) its rate
/// optional, `"rate":[L,P]` and `,"discard":true` after it, at `at`; and
/// where it ends.
fn limit_at(job: &[u8], at: usize) -> Option<(CarriedLimit, usize)> {
    let rest = job.get(at..)?.strip_prefix(b"{\"id\":\"")?;
    let id = plain_string(rest)?;
    let mut rest = &rest[id.len() + 1..];
    let mut concurrency = None;
    if let Some(after) = rest.strip_prefix(b",\"concurrency\":") {
        let (value, after) = digits(after)?;
        concurrency = Some(value.parse::<u64>().ok().filter(|&c| c <= MAX_LIMIT)?);
        rest = after;
    }
    let mut rate = None;
    if let Some(after) = rest.strip_prefix(b",\"rate\":[") {
        let (limit, after) = digits(after)?;
        let (whole, after) = digits(after.strip_prefix(b",")?)?;
        let (period, after) = match after.strip_prefix(b".") {
            Some(fraction) => {
                let (fraction, after) = digits(fraction)?;
                (format!("{whole}.{fraction}"), after)
            }
            None => (whole.to_owned(), after),
        };
        rate = Some(DeclaredRate {
            limit: limit.to_owned(),
            period,
        });
        rest = after.strip_prefix(b"]")?;
    }
    let rest = rest.strip_prefix(b",\"discard\":true").unwrap_or(rest);
    let rest = rest.strip_prefix(b"}")?;
    // A limit without either is left to the script (it reads as 0).
    let concurrency = match (concurrency, &rate) {
        (Some(concurrency), _) => concurrency,
        (None, Some(_)) => MAX_LIMIT,
        (None, None) => return None,
    };
    let limit = CarriedLimit {
        id: String::from_utf8(id.to_vec()).ok()?,
        concurrency,
        rate,
    };
    Some((limit, job.len() - rest.len()))
}

/// The decimal digits (at least one) at the start of `text`, and the rest.
fn digits(text: &[u8]) -> Option<(&str, &[u8])> {
    let n = text.iter().take_while(|b| b.is_ascii_digit()).count();
    let value = std::str::from_utf8(&text[..n]).ok().filter(|_| n > 0)?;
    Some((value, &text[n..]))
}

/// The bytes of a JSON string's body up to its closing quote, if it has
/// neither backslash nor control character (so they are its value).
fn plain_string(body: &[u8]) -> Option<&[u8]> {
    let end = body.iter().position(|&b| b == b'"')?;
    let value = &body[..end];
    (!value.is_empty() && value.iter().all(|&b| b != b'\\' && b >= 0x20)).then_some(value)
}

// The small JSON reader the core's tests share (it has no JSON dependency),
// for the payloads' fixture.
#[cfg(test)]
#[allow(dead_code)]
#[path = "../tests/support/json.rs"]
mod json;

#[cfg(test)]
mod tests {
    use super::json::Json;
    use super::*;

    fn ids(job: &str) -> Option<Vec<(String, u64)>> {
        Carried::read(job.as_bytes()).map(|c| {
            c.limits
                .into_iter()
                .map(|l| (l.id, l.concurrency))
                .collect()
        })
    }

    #[test]
    fn reads_the_middlewares_plain_shape() {
        let job = r#"{"limit_fetch":[{"id":"class:A","concurrency":3},{"id":"key:A#t1","concurrency":1,"discard":true}],"queue":"default","class":"A"}"#;
        assert_eq!(
            ids(job),
            Some(vec![("class:A".into(), 3), ("key:A#t1".into(), 1)])
        );
        let head = Carried::read(job.as_bytes()).unwrap().head;
        assert!(job.as_bytes().starts_with(&head));
        assert!(head.ends_with(br#""queue":"default""#));
    }

    /// A rate is read as its text, which the scripts read; without a
    /// concurrency, its limit has none.
    #[test]
    fn reads_a_declared_rate() {
        let rated = |job: &str| {
            let limit = Carried::read(job.as_bytes()).unwrap().limits.remove(0);
            let rate = limit.rate.unwrap();
            (limit.concurrency, rate.limit, rate.period)
        };
        let job = r#"{"limit_fetch":[{"id":"class:R","rate":[10000000,60]}],"queue":"q"}"#;
        assert_eq!(rated(job), (MAX_LIMIT, "10000000".into(), "60".into()));
        let job = r#"{"limit_fetch":[{"id":"k","concurrency":2,"rate":[5,0.25],"discard":true}],"queue":"q"}"#;
        assert_eq!(rated(job), (2, "5".into(), "0.25".into()));
    }

    #[test]
    fn anything_else_is_left_to_the_script() {
        for job in [
            r#"{"retry":true,"queue":"default"}"#,
            r#"{"limit_fetch":[],"queue":"q"}"#,
            r#"{"limit_fetch":[{"id":"k","rate":[5,-1]}],"queue":"q"}"#,
            r#"{"limit_fetch":[{"id":"k","rate":[5,1e3]}],"queue":"q"}"#,
            r#"{"limit_fetch":[{"id":"k","concurrency":2,"ceiling":4}],"queue":"q"}"#,
            r#"{"limit_fetch":[{"id":"k"}],"queue":"q"}"#,
            // A fair class's tenant: its slot is its turn (lua/prelude/fair.lua).
            r#"{"limit_fetch":[{"id":"key:F#a","fair":"class:F"},{"id":"class:F","concurrency":4}],"queue":"q"}"#,
            r#"{"limit_fetch":[{"id":"k\"x","concurrency":2}],"queue":"q"}"#,
            r#"{"limit_fetch":[{"id":"k","concurrency":2}],"queue":"q\"uo"}"#,
            r#"{"limit_fetch":[{"id":"k","concurrency":-1}],"queue":"q"}"#,
            r#"{"limit_fetch":[{"id":"k","concurrency":9007199254740992}],"queue":"q"}"#,
            r#"{"limit_fetch":[{"concurrency":2,"id":"k"}],"queue":"q"}"#,
            r#"{"limit_fetch":[{"id":"k","concurrency":2}],"class":"A","queue":"q"}"#,
            r#"{"limit_fetch":[{"id":"k","concurrency":2}"#,
            r#"{"limit_fetch":[{"id":"k","concurrency":2}],"queue":"q"#,
        ] {
            assert_eq!(ids(job), None, "{job}");
        }
    }

    /// The core reads the plain payloads the middleware writes
    /// (spec/fixtures/job_limit_payloads.json, which tests/payloads.rs holds
    /// the script's reading to) as the script does, and leaves the others to
    /// it (reads nothing).
    #[test]
    fn the_cores_reading_agrees_with_the_fixture_or_reads_nothing() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/spec/fixtures/job_limit_payloads.json"
        );
        let fixture = Json::parse(&std::fs::read_to_string(path).unwrap());
        let mut read = 0;
        for case in fixture.get("cases").as_array() {
            let name = case.get("case").as_str();
            let payload = case.get("payload").as_str();
            let Some(carried) = Carried::read(payload.as_bytes()) else {
                continue;
            };
            read += 1;
            let limits: Vec<(String, String)> = carried
                .limits
                .iter()
                .map(|l| (l.id.clone(), l.concurrency.to_string()))
                .collect();
            let want: Vec<(String, String)> = case
                .get("limits")
                .as_array()
                .iter()
                .map(|l| match l.get("concurrency") {
                    Json::Number(n) => (l.get("id").as_str().to_owned(), n.clone()),
                    other => panic!("{name}: a concurrency that is not a number: {other:?}"),
                })
                .collect();
            assert_eq!(limits, want, "{name}");
            let queue = format!(r#","queue":"{}""#, case.get("queue").as_str());
            assert!(carried.head.ends_with(queue.as_bytes()), "{name}");
            assert!(payload.as_bytes().starts_with(&carried.head), "{name}");
        }
        assert!(
            read >= 4,
            "the core read only {read} of the fixture's payloads"
        );
    }
}
