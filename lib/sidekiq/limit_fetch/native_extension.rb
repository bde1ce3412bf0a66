# frozen_string_literal: true

# What the binary looks up and pins as it loads, defined before it is: the
# errors it raises and the shapes it reads and builds.
require "sidekiq/limit_fetch/errors"
require "sidekiq/limit_fetch/shapes"

module Sidekiq
  class LimitFetch < BasicFetch
    # Loads the Rust core's binding. A precompiled gem holds one binary per
    # Ruby minor version, at sidekiq/limit_fetch/<3.3>/ (the layout of
    # rake-compiler's cross gems); the source gem compiles one at install,
    # and `rake compile` in a checkout, at the plain path. The versioned one
    # is tried first, the plain one next; when neither loads, the error says
    # why each failed and what to do.
    module NativeExtension
      FEATURE = "limit_fetch_native"

      module_function

      def load
        failures = [versioned_feature, plain_feature].each_with_object({}) do |feature, failed|
          return require(feature)
        rescue LoadError => e
          failed[feature] = e.message
        end
        raise LoadError, message(failures)
      end

      def versioned_feature(ruby_version = RUBY_VERSION)
        "sidekiq/limit_fetch/#{ruby_version[/\A\d+\.\d+/]}/#{FEATURE}"
      end

      def plain_feature = "sidekiq/limit_fetch/#{FEATURE}"

      def message(failures)
        <<~MESSAGE.chomp
          sidekiq-limit_fetch-rs: no native extension loads for Ruby #{RUBY_VERSION} on #{RUBY_PLATFORM}.
          #{failures.map { |feature, error| "  #{feature}: #{error}" }.join("\n")}
          A precompiled gem (x86_64 or aarch64 Linux with glibc, macOS arm64 or x86_64) holds a binary
          for each Ruby it lists; elsewhere, or when its binary does not load here, use the source gem,
          which compiles the extension at install and needs cargo, rustc, a C compiler
          and libclang: `bundle config set force_ruby_platform true && bundle install` (without Bundler:
          `gem install sidekiq-limit_fetch-rs --platform ruby`). In a checkout: `bundle exec rake compile`.
        MESSAGE
      end
    end
  end
end
