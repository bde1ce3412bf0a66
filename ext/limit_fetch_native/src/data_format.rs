//! The data format (the core's `DataFormat`, `FormatChange`) as arrays,
//! which lib/sidekiq/limit_fetch/data_format.rb reads: a format in force is
//! `[format, since_ms, pinned]`.

use limit_fetch_core::format::InForce;
use limit_fetch_core::{DataFormat, FormatChange};
use magnus::{Error, IntoValue, RArray, Ruby};

use crate::capsule_entry;
use crate::helpers::array_of;

fn in_force(ruby: &Ruby, format: InForce) -> RArray {
    ruby.ary_new_from_values(&[
        format.format.into_value_with(ruby),
        format.since_ms.into_value_with(ruby),
        format.pinned.into_value_with(ruby),
    ])
}

/// `[in force, [[CapsuleEntry, highest format], ...]]`.
pub fn to_ruby(ruby: &Ruby, read: DataFormat) -> Result<RArray, Error> {
    let capsules = array_of(ruby, read.capsules, |ruby, (entry, highest)| {
        Ok(ruby.ary_new_from_values(&[
            capsule_entry::to_ruby(ruby, entry)?,
            highest.into_value_with(ruby),
        ]))
    })?;
    Ok(ruby.ary_new_from_values(&[
        in_force(ruby, read.in_force).into_value_with(ruby),
        capsules.into_value_with(ruby),
    ]))
}

/// `[in force after, in force before, data converted]`.
pub fn change_to_ruby(ruby: &Ruby, change: FormatChange) -> RArray {
    ruby.ary_new_from_values(&[
        in_force(ruby, change.in_force).into_value_with(ruby),
        in_force(ruby, change.was).into_value_with(ruby),
        change.converted.into_value_with(ruby),
    ])
}
