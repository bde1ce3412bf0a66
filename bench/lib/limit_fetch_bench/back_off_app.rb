# frozen_string_literal: true

module LimitFetchBench
  # The back_off section's app, in a directory of the run's: a Gemfile that
  # takes the gem from this checkout, and an app.rb that loads it, the
  # section's jobs (BackOffJobs) and their ledger middleware, as a Rails
  # initializer would. Its `sidekiq` processes (#spawn): `bundle exec sidekiq
  # -c THREADS -q back_off -r ./app.rb`, each logging to log/<name>.log.
  class BackOffApp
    attr_reader :dir

    def initialize(dir)
      @dir = dir
    end

    def create
      FileUtils.mkdir_p(File.join(dir, "log"))
      File.write(gemfile, <<~RUBY)
        source "https://rubygems.org"

        gem "sidekiq-limit_fetch-rs", path: #{REPO.dump}
        gem "sidekiq"
      RUBY
      File.write(File.join(dir, "app.rb"), <<~RUBY)
        require "sidekiq"
        require "sidekiq-limit_fetch"
        require #{File.join(__dir__, "back_off_jobs").dump}

        Sidekiq.configure_server do |config|
          config.server_middleware.add(LimitFetchBench::BackOffJobs::Ledger)
        end
      RUBY
      bundle_install
      self
    end

    def gemfile = File.join(dir, "Gemfile")

    def log(name) = File.join(dir, "log", "#{name}.log")

    # The pid of a new `sidekiq` process, as a process group of its own.
    def spawn(name, threads:, redis_url:, downstream_url:)
      env = {"BUNDLE_GEMFILE" => gemfile, "REDIS_URL" => redis_url, "DOWNSTREAM_URL" => downstream_url}
      LimitFetchTools::ChildProcess.spawn(env, "bundle", "exec", "sidekiq", "-c", threads.to_s, "-t", "5",
        "-q", BackOffJobs::QUEUE, "-r", "./app.rb", log: log(name), chdir: dir)
    end

    private

    def bundle_install
      output, status = LimitFetchTools.unbundled do
        Open3.capture2e({"BUNDLE_GEMFILE" => gemfile}, "bundle", "install", "--local", "--quiet", chdir: dir)
      end
      raise Failure, "bundle install of the back_off app (#{gemfile}) failed:\n#{output}" unless status.success?
    end
  end
end
