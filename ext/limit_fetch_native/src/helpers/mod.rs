//! What the binding's files share: constants kept across calls, symbols
//! that stand for Rust enums, and reading and building the Ruby side's
//! `Data` objects.

pub mod data;
pub mod pinned;
pub mod symbol_enum;

pub use data::{field, new_data, seconds};
pub use pinned::Pinned;
