//! Ruby Arrays of the core's lists.

use magnus::{Error, IntoValue, RArray, Ruby};

/// A Ruby Array of `items`, in order, each converted by `convert`.
pub fn array_of<T, V, F>(ruby: &Ruby, items: Vec<T>, mut convert: F) -> Result<RArray, Error>
where
    V: IntoValue,
    F: FnMut(&Ruby, T) -> Result<V, Error>,
{
    let array = ruby.ary_new_capa(items.len());
    for item in items {
        array.push(convert(ruby, item)?)?;
    }
    Ok(array)
}
