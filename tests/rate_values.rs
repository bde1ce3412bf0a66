//! Every reader of a stored rate agrees on the table of values in
//! `spec/fixtures/rate_values.json`: here the core's (`Rate::parse_stored`)
//! and the scripts' (`parse_rate`); `spec/sidekiq/limit_fetch/rates_spec.rb`
//! holds Ruby's to the same table.

mod support;

use std::time::Duration;

use limit_fetch_core::Rate;
use support::eval_after_prelude;
use support::json::Json;

/// Each entry: the stored text, and the (limit, period in microseconds) it
/// reads as, `None` for a broken one.
fn rate_values() -> Vec<(String, Option<(u64, u64)>)> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/spec/fixtures/rate_values.json"
    );
    let Json::Object(members) = Json::parse(&std::fs::read_to_string(path).unwrap()) else {
        panic!("{path}: not an object");
    };
    let Some((_, Json::Array(values))) = members.into_iter().find(|(k, _)| k == "values") else {
        panic!("{path}: no values");
    };
    let number = |json: &Json| match json {
        Json::Number(text) => text.parse::<f64>().unwrap(),
        other => panic!("not a number: {other:?}"),
    };
    values
        .iter()
        .map(|entry| match entry {
            Json::Array(pair) => match pair.as_slice() {
                [Json::String(raw), Json::Null] => (raw.clone(), None),
                [Json::String(raw), Json::Array(rate)] => {
                    let (limit, period) = (number(&rate[0]), number(&rate[1]));
                    (
                        raw.clone(),
                        Some((limit as u64, (period * 1e6).round() as u64)),
                    )
                }
                other => panic!("bad entry {other:?}"),
            },
            other => panic!("bad entry {other:?}"),
        })
        .collect()
}

#[test]
fn the_core_reads_every_stored_rate_as_the_table_says() {
    let values = rate_values();
    assert!(values.len() > 30);
    for (raw, want) in values {
        let want = want.map_or(Rate::BROKEN, |(limit, micros)| Rate {
            limit,
            period: Duration::from_micros(micros),
        });
        assert_eq!(Rate::parse_stored(Some(&raw)), Some(want), "{raw:?}");
    }
}

#[test]
fn the_scripts_read_every_stored_rate_as_the_table_says() {
    for (raw, want) in rate_values() {
        // Text: a Lua number past 2^53 does not survive Redis's integer reply.
        let got: Vec<String> = eval_after_prelude(
            "local r = parse_rate(ARGV[1]) return {string.format('%.0f', r[1]), string.format('%.0f', r[2])}",
            &[],
            &[&raw],
        );
        let want = want.unwrap_or((0, 1_000_000));
        assert_eq!(got, [want.0.to_string(), want.1.to_string()], "{raw:?}");
    }
}
