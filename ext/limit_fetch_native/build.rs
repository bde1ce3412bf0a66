//! The extension's build script: links its relative relocations packed
//! (`-z pack-relative-relocs`, DT_RELR) where the C library that will load
//! it reads them. The loader reads every relocation entry at load, and the
//! kernel keeps the file's pages it read resident: 7,500 entries of 24
//! bytes (180 kB of the file, in every Sidekiq process's RSS) become a
//! bitmap of a few kB.
//!
//! Only glibc 2.36 and later reads DT_RELR (the linker then records a
//! dependency on `GLIBC_ABI_DT_RELR`, so an older glibc refuses the file
//! with a clear error rather than misloading it). A build for the machine
//! it runs on takes the flag when that machine's glibc is 2.36 or later;
//! a build for another target does not, nor one on an older glibc (the
//! release's platform gems, built on old systems to load on them).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let target = std::env::var("TARGET").unwrap_or_default();
    let host = std::env::var("HOST").unwrap_or_default();
    if target == host && target.ends_with("-linux-gnu") && host_glibc_reads_relr() {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-z,pack-relative-relocs");
    }
}

/// The build machine's glibc is 2.36 or later.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn host_glibc_reads_relr() -> bool {
    use std::ffi::{c_char, CStr};
    extern "C" {
        fn gnu_get_libc_version() -> *const c_char;
    }
    // SAFETY: glibc returns a static, NUL-terminated string.
    let version = unsafe { CStr::from_ptr(gnu_get_libc_version()) };
    let mut parts = version.to_str().unwrap_or("").split('.');
    let major: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let minor: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    (major, minor) >= (2, 36)
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn host_glibc_reads_relr() -> bool {
    false
}
