//! The job limits a payload carries, read by the core only where the
//! hand-over (capsule/hand_over/) may pass their slots from one job to
//! the next without the fetch script.
//!
//! The client middleware writes the field first, then the queue:
//! `{"limit_fetch":[{"id":"class:Sync","concurrency":3}],"queue":"default",...`
//! (spec/fixtures/job_limit_payloads.json). Only that plain shape is read
//! here: ids and queue names without quote or backslash, a concurrency of
//! decimal digits, an optional `"discard":true`. Anything else (a rate, an
//! escape, another order) reads as `None`, and the script, whose reading
//! is the rule (lua/prelude/payloads.lua's `job_limits`), decides. So this reader can
//! only make the hand-over rarer, never read a limit differently: two jobs
//! whose [`Carried::head`] bytes are equal carry the same limits to the
//! script too.

use crate::limits::MAX_LIMIT;

const FIRST: &[u8] = b"{\"limit_fetch\":[";

/// One job limit of a payload: its id and the concurrency it declares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CarriedLimit {
    pub id: String,
    pub concurrency: u64,
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

/// `{"id":"...","concurrency":N}` or with `,"discard":true`, at `at`; and
/// where it ends.
fn limit_at(job: &[u8], at: usize) -> Option<(CarriedLimit, usize)> {
    let rest = job.get(at..)?.strip_prefix(b"{\"id\":\"")?;
    let id = plain_string(rest)?;
    let rest = rest[id.len() + 1..].strip_prefix(b",\"concurrency\":")?;
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    let concurrency: u64 = std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()?;
    if concurrency > MAX_LIMIT {
        return None;
    }
    let rest = &rest[digits..];
    let rest = rest.strip_prefix(b",\"discard\":true").unwrap_or(rest);
    let rest = rest.strip_prefix(b"}")?;
    let limit = CarriedLimit {
        id: String::from_utf8(id.to_vec()).ok()?,
        concurrency,
    };
    Some((limit, job.len() - rest.len()))
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

    #[test]
    fn anything_else_is_left_to_the_script() {
        for job in [
            r#"{"retry":true,"queue":"default"}"#,
            r#"{"limit_fetch":[],"queue":"q"}"#,
            r#"{"limit_fetch":[{"id":"k","concurrency":2,"rate":[5,1]}],"queue":"q"}"#,
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
