//! What the binding's files share: constants kept across calls, symbols
//! that stand for Rust enums, reading and building the Ruby side's `Data`
//! objects, and Arrays of the core's lists.

pub mod array;
pub mod data;
pub mod pinned;
pub mod symbol_enum;

pub use array::array_of;
pub use data::{field, new_data, seconds};
pub use pinned::Pinned;
