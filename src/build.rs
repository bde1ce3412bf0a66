//! The build script: digests the function library's source
//! (script/library.rs) into its version, which every process names its
//! functions by, so that a process reads the scripts' text only to load
//! them into Redis, not at every start.

use std::path::PathBuf;

// Of the library, the build script uses only its version.
#[allow(dead_code)]
#[path = "script/library.rs"]
mod library;

fn main() {
    println!("cargo:rerun-if-changed=src/lua");
    println!("cargo:rerun-if-changed=src/script/library.rs");
    println!("cargo:rerun-if-changed=src/build.rs");
    let Some(out) = std::env::var_os("OUT_DIR") else {
        panic!("cargo sets OUT_DIR for a build script");
    };
    let path = PathBuf::from(out).join("library_version.rs");
    if let Err(e) = std::fs::write(&path, format!("{:?}", library::version())) {
        panic!("cannot write {}: {e}", path.display());
    }
}
