//! The fetch reads from a job's payload the limits and queue the client
//! middleware wrote there: `spec/fixtures/job_limit_payloads.json` holds
//! payloads as the middleware writes them (`spec/sidekiq/limit_fetch/
//! payloads_spec.rb` holds the middleware to those bytes), and what the
//! Lua prelude's `job_limits` and `job_queue` must read from each, and
//! whether they had to decode the whole payload to read it. The core's own
//! reading, for the hand-over, is held to the same fixture by src/carried.rs's
//! tests.

mod support;

use support::eval_after_prelude;
use support::json::Json;

/// What the prelude reads from ARGV[1], flattened: the queue, whether the
/// whole payload was decoded, whether reading again gives the same answers
/// (from what the call learnt), then the number of limits and each limit's
/// id, concurrency and discard (Lua's tostring of each).
const READ: &str = r"
local job = ARGV[1]
local limits = job_limits(job)
local queue = job_queue(job)
local again = job_limits(job) == limits and job_queue(job) == queue
local out = {queue or '<none>', tostring(parsed_jobs[job] ~= nil), tostring(again)}
out[#out + 1] = limits and tostring(#limits) or '<none>'
for _, limit in ipairs(limits or {}) do
  out[#out + 1] = limit.id
  out[#out + 1] = tostring(limit.concurrency)
  out[#out + 1] = tostring(limit.discard)
end
return out
";

fn fixture() -> Json {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/spec/fixtures/job_limit_payloads.json"
    );
    Json::parse(&std::fs::read_to_string(path).unwrap())
}

/// What the fixture says the prelude reads from a case's payload, as READ
/// flattens it.
fn expected(case: &Json) -> Vec<String> {
    let queue = match case.get("queue") {
        Json::Null => "<none>".to_owned(),
        queue => queue.as_str().to_owned(),
    };
    let whole = case.get("whole_payload_decoded").as_bool().to_string();
    let mut out = vec![queue, whole, "true".to_owned()];
    match case.get("limits") {
        Json::Null => out.push("<none>".to_owned()),
        limits => {
            let limits = limits.as_array();
            out.push(limits.len().to_string());
            for limit in limits {
                out.push(limit.get("id").as_str().to_owned());
                match limit.get("concurrency") {
                    Json::Number(n) => out.push(n.clone()),
                    other => panic!("a concurrency that is not a number: {other:?}"),
                }
                let discard = limit.has("discard") && limit.get("discard").as_bool();
                out.push(if discard { "true" } else { "nil" }.to_owned());
            }
        }
    }
    out
}

#[test]
fn the_fetch_reads_each_payload_as_the_fixture_says() {
    let fixture = fixture();
    let cases = fixture.get("cases").as_array();
    assert!(cases.len() >= 10, "too few cases: {}", cases.len());
    let mut mismatches = Vec::new();
    for case in cases {
        let name = case.get("case").as_str();
        let payload = case.get("payload").as_str();
        let got: Vec<String> = eval_after_prelude(READ, &[], &[payload]);
        let want = expected(case);
        if got != want {
            mismatches.push(format!("{name}:\n  read     {got:?}\n  expected {want:?}"));
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

/// The fixture shows both ways of reading: the limits' array and the queue
/// after it alone, and the whole payload, so that neither goes untested.
#[test]
fn the_fixture_has_payloads_read_both_ways() {
    let fixture = fixture();
    let whole: Vec<bool> = fixture
        .get("cases")
        .as_array()
        .iter()
        .map(|case| case.get("whole_payload_decoded").as_bool())
        .collect();
    assert!(whole.contains(&true) && whole.contains(&false), "{whole:?}");
}
