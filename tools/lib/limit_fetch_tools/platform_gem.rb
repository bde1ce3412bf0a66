# frozen_string_literal: true

require "fileutils"
require "open3"
require "rbconfig"
require "tmpdir"

module LimitFetchTools
  # What a precompiled (platform) gem holds: the gem's Ruby files, web
  # assets and executable, and the compiled extension, at the versioned path
  # that Sidekiq::LimitFetch::NativeExtension tries first; none of what only
  # builds it (the crates, their Lua scripts, which are compiled in, the
  # extconf, the rb_sys dependency). One definition for the Rakefile's native
  # and cross tasks (`rake native gem`, the release workflow's cross gems) and
  # for the spec that packages one from the extension bin/test compiled.
  module PlatformGem
    BUILD_ONLY = %r{\A(?:src|ext)/|\ACargo\.(?:toml|lock)\z}

    module_function

    # Removes from a copy of the gemspec what only a build needs; returns it.
    def strip!(spec)
      spec.files.reject! { |path| BUILD_ONLY.match?(path) }
      spec.extensions.clear
      spec.dependencies.reject! { |dependency| dependency.name == "rb_sys" }
      spec
    end

    # Where the binary for Ruby +ruby_version+ goes in the gem (as
    # rake-compiler's cross gems lay out one binary per Ruby minor version).
    def binary_path(ruby_version = RUBY_VERSION)
      "lib/sidekiq/limit_fetch/#{ruby_version[/\A\d+\.\d+/]}/limit_fetch_native.#{RbConfig::CONFIG["DLEXT"]}"
    end

    # Packages +gemspec+ (files relative to +root+) as the gem of this
    # machine's platform for this Ruby, with +binary+, an extension compiled
    # here, at #binary_path; the version requirements are those
    # rake-compiler's native task sets. Runs `gem build`, so no cargo.
    # Returns the gem's path in +out_dir+.
    def build(gemspec, root:, binary:, out_dir:)
      spec = platform_spec(gemspec)
      Dir.mktmpdir("platform_gem") do |stage|
        spec.files.each { |path| copy(path == binary_path ? binary : File.join(root, path), File.join(stage, path)) }
        File.write(File.join(stage, "platform.gemspec"), spec.to_ruby)
        package(spec, stage, out_dir)
      end
    end

    def platform_spec(gemspec)
      spec = strip!(gemspec.dup)
      spec.platform = Gem::Platform.local
      minor = RUBY_VERSION[/\A\d+\.\d+/]
      spec.required_ruby_version = [">= #{minor}", "< #{minor.succ}.dev"]
      spec.required_rubygems_version = ">= 3.3.22" if spec.platform.os == "linux" && spec.platform.version
      spec.files += [binary_path]
      spec
    end

    def copy(source, target)
      FileUtils.mkdir_p(File.dirname(target))
      FileUtils.cp(source, target, preserve: true)
    end

    def package(spec, stage, out_dir)
      FileUtils.mkdir_p(out_dir)
      output = File.join(File.expand_path(out_dir), spec.file_name)
      log, status = LimitFetchTools.unbundled do
        Open3.capture2e(Gem.ruby, "-S", "gem", "build", "platform.gemspec", "--output", output, chdir: stage)
      end
      raise Failure, "gem build of the platform gem failed:\n#{log}" unless status.success?

      output
    end
  end
end
