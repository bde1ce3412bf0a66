# frozen_string_literal: true

module LimitFetchBench
  # An app for real `sidekiq` processes, in a directory of a run's: a Gemfile
  # that takes the gem from this checkout (or from `gem`, a gem's root; nil:
  # Sidekiq alone), and an app.rb that loads it, a
  # section's jobs (`jobs`: the file's path without .rb) and, if given, their
  # server middleware (`middleware`: a constant's name), as a Rails
  # initializer would. Its `sidekiq` processes (#spawn): `bundle exec sidekiq
  # -c THREADS -q QUEUE -r ./app.rb` (and -C a sidekiq.yml of #config's),
  # each logging to log/<name>.log.
  class CliApp
    attr_reader :dir

    def initialize(dir, jobs:, queue:, middleware: nil, gem: REPO)
      @dir = dir
      @gem = gem
      @jobs = jobs
      @middleware = middleware
      @queue = queue
    end

    # Writes the app and installs its bundle, unless a run before did.
    def create
      return self if File.exist?(gemfile)

      FileUtils.mkdir_p(File.join(dir, "log"))
      File.write(gemfile, <<~RUBY)
        source "https://rubygems.org"

        #{"gem \"sidekiq-limit_fetch-rs\", path: #{@gem.dump}" if @gem}
        gem "sidekiq"
      RUBY
      File.write(File.join(dir, "app.rb"), app)
      bundle_install
      self
    end

    def gemfile = File.join(dir, "Gemfile")

    def log(name) = File.join(dir, "log", "#{name}.log")

    # Writes `yaml` as the app's config/<name>.yml; its path, for #spawn.
    def config(name, yaml)
      path = File.join(dir, "config", "#{name}.yml")
      FileUtils.mkdir_p(File.dirname(path))
      File.write(path, "#{yaml}\n")
      path
    end

    # The pid of a new `sidekiq` process, as a process group of its own;
    # `env`: what the section's jobs read from their environment; `config`:
    # a sidekiq.yml's path, or nil.
    def spawn(name, threads:, redis_url:, env: {}, config: nil)
      env = env.merge("BUNDLE_GEMFILE" => gemfile, "REDIS_URL" => redis_url)
      LimitFetchTools::ChildProcess.spawn(env, "bundle", "exec", "sidekiq", "-c", threads.to_s, "-t", "5",
        "-q", @queue, *(["-C", config] if config), "-r", "./app.rb", log: log(name), chdir: dir)
    end

    private

    def app
      setup = @middleware && <<~RUBY

        Sidekiq.configure_server do |config|
          config.server_middleware.add(#{@middleware})
        end
      RUBY
      <<~RUBY
        require "sidekiq"
        #{'require "sidekiq-limit_fetch"' if @gem}
        require #{@jobs.dump}
        #{setup}
      RUBY
    end

    def bundle_install
      output, status = LimitFetchTools.unbundled do
        Open3.capture2e({"BUNDLE_GEMFILE" => gemfile}, "bundle", "install", "--local", "--quiet", chdir: dir)
      end
      raise Failure, "bundle install of the app in #{dir} failed:\n#{output}" unless status.success?
    end
  end
end
