//! The Lua prelude's key builders name the keys `src/keys.rs`, the data
//! model, names.

mod support;

use limit_fetch_core::keys;
use support::{eval_after_prelude, try_eval_after_prelude};

#[test]
fn the_preludes_key_names_are_the_data_models() {
    let names = [
        "default",
        "",
        "a:b",
        "queue:nested",
        "with space",
        "ünïcødé ٥",
        "{tag}*?[x]",
        "%d+ (.-)%",
        "line\nbreak\ttab",
        "quote'\"\\",
        "..",
    ];
    let uuids = ["1b4e28ba-2fa1-11d2-883f-0016d3cca427", "", "odd: uuid %s"];
    for name in names {
        for uuid in uuids {
            let got: Vec<String> = eval_after_prelude(
                "return {PREFIX, RECOVERIES_KEY, DEAD_KEY, LIMITS_WITH_PARKED_KEY, DISCARDED_KEY,
                         queue_key(ARGV[1]), limit_key(ARGV[1]), process_limit_key(ARGV[1]),
                         busy_key(ARGV[1]), in_progress_key(ARGV[2], ARGV[1]),
                         capsule_queues_key(ARGV[2]), job_limit_key(ARGV[1]),
                         job_busy_key(ARGV[1]), parked_key(ARGV[1]),
                         capsule_limits_key(ARGV[2]), paused_key(ARGV[1]),
                         capsule_info_key(ARGV[2]), CAPSULES_KEY, REGISTERED_KEY, BEATS_KEY, UNREGISTERED_KEY, OUTAGE_KEY, LAST_BEAT_KEY,
                         heartbeat_key(ARGV[2]), rate_key(ARGV[1]), starts_key(ARGV[1]),
                         job_rate_key(ARGV[1]), job_starts_key(ARGV[1]), RATE_PARKED_KEY,
                         job_released_key(ARGV[1]), RATE_DUE_KEY, RATE_WAKE_KEY, RECOVERED_KEY,
                         job_back_off_key(ARGV[1]), job_back_off_streak_key(ARGV[1]),
                         class_back_off_key(ARGV[1]), class_back_offs_key(ARGV[1]), BACK_OFFS_KEY,
                         job_adaptive_key(ARGV[1]), limit_range_key(ARGV[1]), adaptive_key(ARGV[1]),
                         fair_waiting_key(ARGV[1]), fair_queue_id(ARGV[1]), FORMAT_KEY, FORMATS_KEY}",
                &[],
                &[name, uuid],
            );
            let want = [
                keys::PREFIX.to_owned(),
                keys::RECOVERIES.to_owned(),
                keys::DEAD.to_owned(),
                keys::LIMITS_WITH_PARKED.to_owned(),
                keys::DISCARDED.to_owned(),
                keys::queue(name),
                keys::limit(name),
                keys::process_limit(name),
                keys::busy(name),
                keys::in_progress(uuid, name),
                keys::capsule_queues(uuid),
                keys::job_limit(name),
                keys::job_busy(name),
                keys::parked(name),
                keys::capsule_limits(uuid),
                keys::paused(name),
                keys::capsule_info(uuid),
                keys::CAPSULES.to_owned(),
                keys::REGISTERED.to_owned(),
                keys::BEATS.to_owned(),
                keys::UNREGISTERED.to_owned(),
                keys::OUTAGE.to_owned(),
                keys::LAST_BEAT.to_owned(),
                keys::heartbeat(uuid),
                keys::rate(name),
                keys::starts(name),
                keys::job_rate(name),
                keys::job_starts(name),
                keys::RATE_PARKED.to_owned(),
                keys::job_released(name),
                keys::RATE_DUE.to_owned(),
                keys::RATE_WAKE.to_owned(),
                keys::RECOVERED.to_owned(),
                keys::job_back_off(name),
                keys::job_back_off_streak(name),
                keys::class_back_off(name),
                keys::class_back_offs(name),
                keys::BACK_OFFS.to_owned(),
                keys::job_adaptive(name),
                keys::limit_range(name),
                keys::adaptive(name),
                keys::fair_waiting(name),
                keys::fair_queue_id(name),
                keys::FORMAT.to_owned(),
                keys::FORMATS.to_owned(),
            ];
            assert_eq!(got, want, "queue {name:?}, capsule {uuid:?}");
        }
    }
}

/// NONE, the empty table a call reads where it has nothing, outlives the
/// call: once a call has begun (new_call, which every function runs first),
/// a write into it fails the script, naming it, and leaves it empty;
/// reading it works as reading any empty table.
#[test]
fn a_write_into_none_fails_loudly() {
    let read: Vec<i64> = eval_after_prelude(
        "new_call()
         local n = 0
         for _ in pairs(NONE) do n = n + 1 end
         for _ in ipairs(NONE) do n = n + 1 end
         return {#NONE, n, NONE.x == nil and 1 or 0}",
        &[],
        &[],
    );
    assert_eq!(read, vec![0, 0, 1]);
    for write in ["NONE.x = 1", "NONE[1] = 'job'", "NONE[#NONE + 1] = 'job'"] {
        let error = try_eval_after_prelude::<()>(&format!("new_call() {write}"), &[], &[])
            .expect_err(&format!("{write} must fail"))
            .to_string();
        assert!(error.contains("a write into NONE"), "{write}: {error}");
        let after: Vec<i64> = eval_after_prelude(
            &format!(
                "new_call()
                 local wrote = pcall(function() {write} end)
                 return {{wrote and 1 or 0, #NONE, next(NONE) and 1 or 0}}"
            ),
            &[],
            &[],
        );
        assert_eq!(after, vec![0, 0, 0], "{write}");
    }
}
