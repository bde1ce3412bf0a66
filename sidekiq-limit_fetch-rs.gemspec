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

  spec.files = Dir["lib/**/*.rb", "web/**/*.{erb,yml,css}", "src/**/*.{rs,lua}", "ext/**/*.{rs,rb,toml}",
    "Cargo.{toml,lock}", "exe/*", "README.md", "LICENSE"]
  spec.bindir = "exe"
  spec.executables = ["sidekiq-limits"]
  spec.require_paths = ["lib"]
  spec.extensions = ["ext/limit_fetch_native/extconf.rb"]

  spec.add_dependency "rb_sys", "~> 0.9"
  spec.add_dependency "sidekiq", ">= 8", "< 9"
end
