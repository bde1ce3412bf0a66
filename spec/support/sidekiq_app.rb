# frozen_string_literal: true

require "bundler"
require "fileutils"
require "open3"
require "tmpdir"
require "yaml"
require_relative "../../tools/lib/limit_fetch_tools"

# A throwaway app for the end-to-end specs: a Gemfile using this repository
# by path, an app.rb that requires the gem and the job classes (TrackedJob,
# the keyed jobs), and one
# config/<name>.yml per kind of process. Processes are real `bundle exec
# sidekiq` commands (LimitFetchTools::ChildProcess: a process group each).
class SidekiqApp
  REPO_ROOT = File.expand_path("../..", __dir__)

  attr_reader :dir

  def initialize
    @dir = Dir.mktmpdir("limit_fetch_app")
    @processes = []
    write_app
    bundle_install
  end

  # Writes config/<name>.yml; returns its path relative to the app.
  def write_config(name, queues:, limits: nil, process_limits: nil, class_limits: nil, concurrency: 5, timeout: 25)
    options = {"concurrency" => concurrency, "timeout" => timeout, "queues" => queues}
    options["limits"] = limits if limits
    options["process_limits"] = process_limits if process_limits
    options["class_limits"] = class_limits if class_limits
    path = File.join("config", "#{name}.yml")
    File.write(File.join(dir, path), YAML.dump(options))
    path
  end

  # Starts `bundle exec sidekiq -C <config> -r ./app.rb` as process +name+.
  # +compact+: besides the Process.warmup that Sidekiq's CLI runs at boot,
  # the process moves every movable object once it has started, and compacts
  # at every major GC after that.
  # +env+: more variables (LF_TEST_REQUIRE: a file app.rb requires first).
  # +require+: the file `sidekiq -r` loads instead of app.rb (one that does
  # not load the gem, say).
  def spawn(name, config:, heartbeat_period: nil, poll_range: "0.05..0.1", redis_url: RedisServer.url,
    compact: false, env: {}, require: "./app.rb")
    env = env.merge(
      "BUNDLE_GEMFILE" => File.join(dir, "Gemfile"),
      "REDIS_URL" => redis_url,
      "LF_TEST_COMPACT" => ("1" if compact),
      "LF_TEST_PROCESS" => name,
      "LF_TEST_POLL_RANGE" => poll_range,
      "LF_TEST_HEARTBEAT_PERIOD" => heartbeat_period&.to_s,
      "APP_ENV" => "production"
    )
    log_path = File.join(dir, "log", "#{name}.log")
    pid = LimitFetchTools::ChildProcess.spawn(env, "bundle", "exec", "sidekiq", "-C", config, "-r", require,
      log: log_path, chdir: dir)
    SidekiqProcess.new(name, pid, log_path).tap { |process| @processes << process }
  end

  # Prints the last lines of every process's log, for a failed example.
  def warn_logs(lines = 40)
    Dir[File.join(dir, "log", "*.log")].each do |path|
      warn "---- #{File.basename(path)} (last #{lines} lines)\n#{File.readlines(path).last(lines).join}"
    end
  end

  def stop_all
    @processes.each(&:kill!)
    @processes.clear
  end

  def remove
    stop_all
    FileUtils.rm_rf(dir)
  end

  private

  def write_app
    FileUtils.mkdir_p(File.join(dir, "config"))
    FileUtils.mkdir_p(File.join(dir, "log"))
    File.write(File.join(dir, "Gemfile"), <<~RUBY)
      # frozen_string_literal: true

      source "https://rubygems.org"

      gem "sidekiq"
      gem "sidekiq-limit_fetch-rs", path: #{REPO_ROOT.inspect}
    RUBY
    File.write(File.join(dir, "app.rb"), <<~RUBY)
      # frozen_string_literal: true

      require "sidekiq"
      require "sidekiq-limit_fetch"
      require #{File.join(REPO_ROOT, "spec/support/keyed_jobs.rb").inspect}
      require ENV["LF_TEST_REQUIRE"] if ENV["LF_TEST_REQUIRE"]

      Sidekiq.configure_server do |config|
        # After the gem's own :startup hook: its capsules are set up.
        config.on(:startup) do
          if ENV["LF_TEST_COMPACT"]
            GC.verify_compaction_references(expand_heap: true, toward: :empty)
            GC.auto_compact = true
          end
          config.logger.info("heap compactions so far: \#{GC.stat(:compact_count)}")
        end
        if ENV["LF_TEST_HEARTBEAT_PERIOD"]
          Sidekiq::LimitFetch.configuration[:heartbeat_period] = Integer(ENV["LF_TEST_HEARTBEAT_PERIOD"])
        end
        if ENV["LF_TEST_POLL_RANGE"]
          low, high = ENV["LF_TEST_POLL_RANGE"].split("..").map { |value| Float(value) }
          Sidekiq::LimitFetch.configuration[:poll_range] = low..high
        end
      end
    RUBY
  end

  def bundle_install
    env = {"BUNDLE_GEMFILE" => File.join(dir, "Gemfile")}
    output, status = LimitFetchTools.unbundled do
      Open3.capture2e(env, "bundle", "install", "--local", "--quiet", chdir: dir)
    end
    raise "bundle install --local failed in #{dir}:\n#{output}" unless status.success?
  end
end

# One `sidekiq` process started by SidekiqApp#spawn.
class SidekiqProcess
  attr_reader :name, :pid, :log_path, :status

  def initialize(name, pid, log_path)
    @name = name
    @pid = pid
    @log_path = log_path
    @status = nil
  end

  def alive?
    @status ||= LimitFetchTools::ChildProcess.ended(pid)
    @status.nil?
  end

  # To the process itself, not its group.
  def signal(name)
    Process.kill(name, pid)
  end

  # Waits up to +timeout+ seconds for the process to exit; its status or nil.
  def wait(timeout)
    @status = LimitFetchTools::ChildProcess.wait(pid, timeout: timeout) if alive?
    @status
  end

  # SIGKILL to its whole process group, then reap it.
  def kill!
    @status = LimitFetchTools::ChildProcess.kill(pid) if alive?
  end

  def log
    File.exist?(log_path) ? File.read(log_path) : ""
  end

  def log_tail(lines = 40)
    log.lines.last(lines).join
  end
end
