//! Builds `Sidekiq::LimitFetch::BeatReport` and its parts (lib/sidekiq/
//! limit_fetch/shapes.rb) from the core's `BeatReport`.
//!
//! Built here, by calling the Ruby classes' `new` with keyword arguments,
//! rather than returned as arrays for Ruby to wrap: the members are then
//! named on both sides of the seam and their order on neither, and a member
//! renamed on one side only fails at the first beat (Ruby's `missing
//! keyword`) instead of shifting a value into the wrong field.

use limit_fetch_core::{BeatReport, JobRef, Reaped, Rebooked};
use magnus::{prelude::*, Error, IntoValue, RClass, Ruby, Value};

use crate::helpers::{array_of, new_data, Pinned};

static BEAT_REPORT: Pinned<RClass> = Pinned::new("BeatReport");
static REAPED: Pinned<RClass> = Pinned::new("BeatReport::Reaped");
static JOB_REF: Pinned<RClass> = Pinned::new("BeatReport::JobRef");
static CORRECTION: Pinned<RClass> = Pinned::new("BeatReport::Correction");
static JOB: Pinned<RClass> = Pinned::new("BeatReport::Job");
static REBOOKED: Pinned<RClass> = Pinned::new("BeatReport::Rebooked");

pub fn init(namespace: RClass) -> Result<(), Error> {
    for class in [
        &BEAT_REPORT,
        &REAPED,
        &JOB_REF,
        &CORRECTION,
        &JOB,
        &REBOOKED,
    ] {
        class.init(namespace)?;
    }
    Ok(())
}

pub fn to_ruby(ruby: &Ruby, report: BeatReport) -> Result<Value, Error> {
    let reaped = array_of(ruby, report.reaped, reaped_to_ruby)?;
    let corrected = array_of(ruby, report.corrected, |ruby, (key, before, after)| {
        new_data(
            ruby,
            CORRECTION.get(ruby)?,
            &[
                ("key", key.into_value_with(ruby)),
                ("before", before.into_value_with(ruby)),
                ("after", after.into_value_with(ruby)),
            ],
        )
    })?;
    new_data(
        ruby,
        BEAT_REPORT.get(ruby)?,
        &[
            ("reaped", reaped.as_value()),
            ("corrected", corrected.as_value()),
            ("orphans", jobs_to_ruby(ruby, report.orphans)?),
            ("restored", report.restored.into_value_with(ruby)),
            ("lost_data", report.lost_data.into_value_with(ruby)),
            ("rebooked", rebooked_to_ruby(ruby, report.rebooked)?),
            ("finished", jobs_to_ruby(ruby, report.finished)?),
            ("held_off", report.held_off.into_value_with(ruby)),
            ("released", report.released.into_value_with(ruby)),
            (
                "format_switched",
                report.format_switched.into_value_with(ruby),
            ),
        ],
    )
}

/// (queue, jid) pairs as `BeatReport::Job`s.
fn jobs_to_ruby(ruby: &Ruby, jobs: Vec<(String, String)>) -> Result<Value, Error> {
    let array = array_of(ruby, jobs, |ruby, (queue, jid)| {
        new_data(
            ruby,
            JOB.get(ruby)?,
            &[
                ("queue", queue.into_value_with(ruby)),
                ("jid", jid.into_value_with(ruby)),
            ],
        )
    })?;
    Ok(array.as_value())
}

fn rebooked_to_ruby(ruby: &Ruby, jobs: Vec<Rebooked>) -> Result<Value, Error> {
    let array = array_of(ruby, jobs, |ruby, job| {
        new_data(
            ruby,
            REBOOKED.get(ruby)?,
            &[
                ("queue", job.queue.into_value_with(ruby)),
                ("jid", job.jid.into_value_with(ruby)),
                ("withdrawn", job.withdrawn.into_value_with(ruby)),
            ],
        )
    })?;
    Ok(array.as_value())
}

fn reaped_to_ruby(ruby: &Ruby, reaped: Reaped) -> Result<Value, Error> {
    let dead = array_of(ruby, reaped.dead, job_ref_to_ruby)?;
    new_data(
        ruby,
        REAPED.get(ruby)?,
        &[
            ("uuid", reaped.uuid.into_value_with(ruby)),
            ("freed", reaped.freed.into_value_with(ruby)),
            ("requeued", reaped.requeued.into_value_with(ruby)),
            ("dead", dead.as_value()),
            ("unregistered", reaped.unregistered.into_value_with(ruby)),
        ],
    )
}

fn job_ref_to_ruby(ruby: &Ruby, (queue, jid, class): JobRef) -> Result<Value, Error> {
    new_data(
        ruby,
        JOB_REF.get(ruby)?,
        &[
            ("queue", queue.into_value_with(ruby)),
            ("jid", jid.into_value_with(ruby)),
            ("job_class", class.into_value_with(ruby)),
        ],
    )
}
