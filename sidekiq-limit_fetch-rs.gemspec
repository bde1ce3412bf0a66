# frozen_string_literal: true

Gem::Specification.new do |spec|
  spec.name = "sidekiq-limit_fetch-rs"
  # Read, not required: requiring would define the class before Sidekiq is loaded.
  spec.version = File.read(File.join(__dir__, "lib/sidekiq/limit_fetch/version.rb"))[/VERSION = "([^"]+)"/, 1]
  spec.summary = "Per-queue concurrency limits for Sidekiq 8, global and per process, on a Rust core"
  spec.description = "A Sidekiq 8 fetch strategy that caps how many jobs of each queue run at once, " \
                     "across every process sharing a Redis and within each process. Drop-in for sidekiq-limit_fetch v5."
  spec.authors = ["sidekiq-limit_fetch-rs maintainers"]
  spec.license = "MIT"
  spec.required_ruby_version = ">= 3.2"
  spec.metadata["rubygems_mfa_required"] = "true"

  # What the gem runs and what compiles its extension at install, nothing
  # else: no specs, bench, chaos, demo, tools or build output. src/**/tests.rs
  # are modules of `cargo test` only. A platform gem ships the binary instead
  # of src/, ext/ and Cargo.* (tools/lib/limit_fetch_tools/platform_gem.rb).
  spec.files = Dir["lib/**/*.rb", "web/{assets,locales,views}/**/*.{css,yml,erb}", "src/**/*.{rs,lua,txt}",
    "ext/limit_fetch_native/{Cargo.toml,build.rs,extconf.rb}", "ext/limit_fetch_native/src/**/*.rs",
    "Cargo.{toml,lock}", "exe/sidekiq-limits", "README.md", "LICENSE"].reject { |path| path.end_with?("/tests.rs") }
  spec.bindir = "exe"
  spec.executables = ["sidekiq-limits"]
  spec.require_paths = ["lib"]
  spec.extensions = ["ext/limit_fetch_native/extconf.rb"]

  spec.add_dependency "rb_sys", "~> 0.9"
  spec.add_dependency "sidekiq", ">= 8", "< 9"
end
