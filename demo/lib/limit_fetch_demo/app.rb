# frozen_string_literal: true

module LimitFetchDemo
  # The demo app in a temporary directory: demo/app (app.rb and
  # config/sidekiq.yml), or another template (bin/chaos uses chaos/app), plus
  # a Gemfile that takes the gem from this repository, with +gems+ besides
  # (bin/demo's Web UI needs puma and rack-session).
  class App
    TEMPLATE = File.join(REPO, "demo", "app")

    attr_reader :dir

    def initialize(dir, template: TEMPLATE, gems: [])
      @dir = dir
      @template = template
      @gems = gems
    end

    def create
      FileUtils.cp_r(File.join(@template, "."), dir)
      FileUtils.mkdir_p(File.join(dir, "log"))
      File.write(gemfile, <<~RUBY)
        source "https://rubygems.org"

        gem "sidekiq-limit_fetch-rs", path: #{REPO.dump}
        gem "sidekiq"
        #{@gems.map { "gem #{_1.dump}" }.join("\n")}
      RUBY
      bundle_install
      self
    end

    # Puts the app's bundle (Sidekiq, redis-client, the gem) on this
    # process's load path too, and loads the gem's library (not its
    # installation into Sidekiq): Keys names its Redis keys (Stats).
    def load_bundle
      ENV["BUNDLE_GEMFILE"] = gemfile
      require "bundler/setup"
      require "sidekiq/api"
      require "sidekiq/limit_fetch"
    end

    def gemfile = File.join(dir, "Gemfile")

    def log(name) = File.join(dir, "log", "#{name}.log")

    private

    def bundle_install
      output, status = bundle("install", "--local", "--quiet")
      output, status = bundle("install", "--quiet") unless status.success?
      raise Failure, "bundle install of the demo app (#{gemfile}) failed:\n#{output}" unless status.success?
    end

    def bundle(*)
      LimitFetchTools.unbundled { Open3.capture2e({"BUNDLE_GEMFILE" => gemfile}, "bundle", *, chdir: dir) }
    end
  end
end
