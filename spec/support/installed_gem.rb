# frozen_string_literal: true

require "fileutils"
require "open3"
require "tmpdir"
require "yaml"
require_relative "../../tools/lib/limit_fetch_tools"
require_relative "sidekiq_app"

# A gem file installed into a GEM_HOME of its own, as a user would
# (`gem install --local`; its dependencies are the machine's installed gems),
# on a PATH where cargo and rustc are scripts that log their call and exit 1:
# nothing here can compile Rust, and the log shows whether anything tried.
# #spawn starts a `sidekiq` process (no Bundler, no checkout on the load path)
# whose app requires the installed gem.
class InstalledGem
  TOOLS = %w[cargo rustc].freeze

  attr_reader :dir

  def initialize
    @dir = Dir.mktmpdir("installed_gem")
    %w[gem_home bin app/config app/log].each { |sub| FileUtils.mkdir_p(File.join(dir, sub)) }
    TOOLS.each { |tool| write_failing_tool(tool) }
  end

  def gem_home = File.join(dir, "gem_home")

  def app_dir = File.join(dir, "app")

  def env
    {"GEM_HOME" => gem_home, "PATH" => "#{File.join(dir, "bin")}:#{ENV.fetch("PATH")}", "RUBYLIB" => nil,
     "RUBYOPT" => nil, "BUNDLE_GEMFILE" => nil}
  end

  # Runs +command+ in #env, outside the suite's bundle; [output, status].
  def run(*command, chdir: dir)
    LimitFetchTools.unbundled { Open3.capture2e(env, *command, chdir: chdir) }
  end

  def install(gem_path)
    output, status = run("gem", "install", "--local", "--no-document", gem_path)
    raise "gem install --local #{gem_path} failed:\n#{output}" unless status.success?

    output
  end

  # The calls of cargo or rustc made on this PATH so far.
  def tool_calls
    path = File.join(dir, "tool_calls.log")
    File.exist?(path) ? File.readlines(path, chomp: true) : []
  end

  def clear_tool_calls = FileUtils.rm_f(File.join(dir, "tool_calls.log"))

  # Writes the app (config/<name>.yml holding +options+, app.rb requiring the
  # gem and the spec's TrackedJob, and recording at startup where the gem and
  # its extension were loaded from) and starts `sidekiq` in it.
  def spawn(name, redis_url:, **options)
    File.write(File.join(app_dir, "config", "#{name}.yml"), YAML.dump(options.transform_keys(&:to_s)))
    File.write(File.join(app_dir, "app.rb"), app_rb)
    log_path = File.join(app_dir, "log", "#{name}.log")
    pid = LimitFetchTools::ChildProcess.spawn(env.merge("REDIS_URL" => redis_url, "LF_TEST_PROCESS" => name),
      "sidekiq", "-C", "config/#{name}.yml", "-r", "./app.rb", log: log_path, chdir: app_dir)
    SidekiqProcess.new(name, pid, log_path)
  end

  def remove = FileUtils.rm_rf(dir)

  private

  def write_failing_tool(tool)
    path = File.join(dir, "bin", tool)
    File.write(path, <<~SH)
      #!/bin/sh
      echo "#{tool} $*" >> #{File.join(dir, "tool_calls.log")}
      echo "#{tool}: not available here" >&2
      exit 1
    SH
    File.chmod(0o755, path)
  end

  def app_rb
    <<~RUBY
      # frozen_string_literal: true

      require "json"
      require "sidekiq"
      require "sidekiq-limit_fetch"
      require #{File.join(SidekiqApp::REPO_ROOT, "spec/support/tracked_job.rb").inspect}

      Sidekiq.configure_server do |config|
        config.on(:startup) do
          spec = Gem.loaded_specs.fetch("sidekiq-limit_fetch-rs")
          loaded = {
            "gem_dir" => spec.full_gem_path, "platform" => spec.platform.to_s,
            "features" => $LOADED_FEATURES
          }
          config.redis { |conn| conn.call("SET", "lf_test:loaded", JSON.generate(loaded)) }
        end
      end
    RUBY
  end
end
