use magnus::Ruby;
#[magnus::init]
fn init(_ruby: &Ruby) -> Result<(), magnus::Error> { let _ = limit_fetch_core::ping; Ok(()) }
