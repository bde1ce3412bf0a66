# frozen_string_literal: true

# What idle Sidekiq processes cost Redis, with the gem's fetch and with
# Sidekiq's BasicFetch, in the same run on the same Redis: real `sidekiq`
# processes (bench/idle_cost/app.rb) on an empty queue, everything they send
# counted (Sidekiq's own heartbeat and scheduler poller, the fetch's blocking
# waits or re-checks, the gem's capsule heartbeat and reaper), over windows
# of --seconds (default 60) after --settle seconds (default 80: past
# Sidekiq's boot and its poller's first wait, and past a heartbeat's expiry,
# 60 s, after which a capsule reaps at each of its beats). Per scenario:
# Redis commands per second by command (those a script or function runs
# included) and Redis CPU (INFO commandstats and INFO cpu deltas, as
# bin/bench's RedisProbe reads them), per capsule and times 100, and the
# ratio to BasicFetch; first, the same window with no process at all
# (Redis's own background work). The scenarios: one process of concurrency
# 5, then 10 (not with --no-single); --processes processes of concurrency
# --concurrency (default 5; default 10 and 30 processes); one process of
# --capsules capsules of that concurrency each (default 100), or P
# processes of C capsules each for an entry PxC (a fleet of more capsules
# than the machine runs processes). Every capsule serves the queue
# "default", and --queues N - 1 more (idle-1...; default none).
#
#   bundle exec ruby bench/idle_cost.rb [--seconds S] [--settle S] [--processes N,N] [--capsules N|PxC,...]
#                                       [--concurrency N] [--queues N] [--only basic|limit] [--no-single]
#
# Runs where bin/bench does (bin/sandbox bash -c 'bundle exec ruby bench/idle_cost.rb').
require "optparse"
require "redis-client"
require "sidekiq/limit_fetch"
require "tmpdir"
$LOAD_PATH.unshift(File.expand_path("lib", __dir__), File.expand_path("../demo/lib", __dir__))
require "limit_fetch_demo"

module IdleCost
  TEMPLATE = File.join(__dir__, "idle_cost")
  OWN = /\A(info|config)/

  # `capsules`: per process.
  # `queues`: how many each capsule serves.
  Scenario = Data.define(:processes, :concurrency, :capsules, :queues) do
    def to_s
      "#{processes} process#{"es" if processes > 1}#{" x #{capsules} capsules" if capsules > 1} " \
        "x concurrency #{concurrency}#{" x #{queues} queues" if queues > 1}"
    end

    # "default", and idle-1... up to `queues` queues.
    def queue_names = ["default", *(1...queues).map { "idle-#{_1}" }]

    def all_capsules = processes * capsules
  end

  # The command line's options, as a Hash.
  module Options
    DEFAULTS = {seconds: 60.0, settle: 80.0, processes: [10, 30], capsules: [[1, 100]], fetches: %w[basic limit],
                single: true, concurrency: 5, queues: 1}.freeze
    INTEGERS = ->(list) { list.map { Integer(_1) } }
    # "N": one process of N capsules; "PxC": P processes of C capsules each.
    FLEET = ->(entry) { entry.include?("x") ? entry.split("x", 2).map { Integer(_1) } : [1, Integer(entry)] }
    FLEETS = ->(list) { list.map(&FLEET) }
    SWITCHES = [[:seconds, "--seconds S", Float], [:settle, "--settle S", Float],
                [:processes, "--processes N,N", Array, INTEGERS], [:capsules, "--capsules N|PxC,...", Array, FLEETS],
                [:fetches, "--only FETCH", %w[basic limit], ->(fetch) { [fetch] }],
                [:single, "--[no-]single", TrueClass], [:concurrency, "--concurrency N", Integer],
                [:queues, "--queues N", Integer]].freeze

    def self.parse(argv)
      values = DEFAULTS.dup
      OptionParser.new do |opts|
        SWITCHES.each do |key, switch, type, convert|
          opts.on(switch, type) { |value| values[key] = convert ? convert.call(value) : value }
        end
      end.parse!(argv)
      values
    end
  end

  module_function

  def run(argv)
    opts = Options.parse(argv)
    Dir.mktmpdir("limit-fetch-idle-") do |dir|
      app = LimitFetchDemo::App.new(dir, template: TEMPLATE).create
      redis = LimitFetchTools::RedisServer.new(dir: File.join(dir, "redis").tap { Dir.mkdir(_1) }).start
      begin
        report(redis, app, opts)
      ensure
        redis.stop
      end
    end
  end

  def report(redis, app, opts)
    puts "#{redis.description}; CPU: #{LimitFetchTools.cpu_model}, #{Etc.nprocessors} cores; " \
         "windows of #{opts[:seconds]} s after #{opts[:settle]} s settling"
    alone = window(redis, opts[:seconds])
    puts format("no process: %<rate>.3f commands/s, Redis CPU %<cpu>.3f ms/s", rate: alone[:rate], cpu: alone[:cpu_ms])
    scenarios(opts).each { |scenario| report_scenario(redis, app, scenario, opts, alone) }
  end

  def report_scenario(redis, app, scenario, opts, alone)
    results = opts[:fetches].to_h { [_1, measure(redis, app, scenario, _1, opts)] }
    puts "", "#{scenario}:"
    results.each { |fetch, result| puts lines(scenario, fetch, result, results["basic"], alone) }
  end

  # One process of concurrency 5 and 10 (unless --no-single), then
  # --processes processes, then the fleets of --capsules capsules, each of
  # concurrency --concurrency.
  def scenarios(opts)
    singles = opts[:single] ? [Scenario.new(1, 5, 1, 1), Scenario.new(1, 10, 1, 1)] : []
    fleets = opts[:processes].map { [_1, 1] } + opts[:capsules]
    singles + fleets.map { |processes, capsules| Scenario.new(processes, opts[:concurrency], capsules, opts[:queues]) }
  end

  def measure(redis, app, scenario, fetch, opts)
    redis.call("FLUSHALL")
    pids = Array.new(scenario.processes) { spawn(app, redis, scenario, fetch, _1) }
    LimitFetchTools.wait_for("#{scenario} (#{fetch}) did not start", timeout: 600, interval: 0.5) do
      started?(redis, scenario, fetch)
    end
    sleep opts[:settle]
    window(redis, opts[:seconds])
  ensure
    LimitFetchTools::ChildProcess.stop(pids || [], timeout: 15)
  end

  # Every process registered with Sidekiq, and with the gem every capsule
  # with the gem.
  def started?(redis, scenario, fetch)
    capsules = fetch == "limit" ? redis.call("SCARD", Sidekiq::LimitFetch::Keys::CAPSULES) : scenario.all_capsules
    redis.call("SCARD", "processes") >= scenario.processes && capsules >= scenario.all_capsules
  end

  def spawn(app, redis, scenario, fetch, index)
    queues = scenario.queue_names
    env = {"BUNDLE_GEMFILE" => app.gemfile, "REDIS_URL" => redis.url, "IDLE_FETCH" => fetch,
           "IDLE_CAPSULES" => scenario.capsules.to_s, "IDLE_QUEUES" => queues.join(",")}
    LimitFetchTools::ChildProcess.spawn(env, "bundle", "exec", "sidekiq", "-r", "./app.rb",
      *queues.flat_map { ["-q", _1] }, "-c", scenario.concurrency.to_s, log: app.log("#{fetch}-#{index}"),
      chdir: app.dir)
  end

  # Commands per second (by command and in all) and Redis CPU in ms per
  # second over `seconds` of Redis's life from now.
  def window(redis, seconds)
    redis.with_client do |conn|
      conn.call("CONFIG", "RESETSTAT")
      cpu = cpu(conn)
      started = LimitFetchTools.monotonic
      sleep seconds
      calls = calls(conn)
      elapsed = LimitFetchTools.monotonic - started
      {calls: calls, rate: calls.values.sum / elapsed, cpu_ms: (cpu(conn) - cpu) * 1e3 / elapsed, seconds: elapsed}
    end
  end

  # Calls by command since the reset, but the probe's own.
  def calls(conn)
    stats = conn.call("INFO", "commandstats").scan(/^cmdstat_(\S+?):calls=(\d+)/)
    stats.reject { |name, _| name.match?(OWN) }.to_h { |name, n| [name, n.to_i] }
  end

  def cpu(conn)
    info = conn.call("INFO", "cpu")
    info[/used_cpu_user:([\d.]+)/, 1].to_f + info[/used_cpu_sys:([\d.]+)/, 1].to_f
  end

  # A fetch's figures, per capsule and times 100, with their ratio to
  # BasicFetch's; its commands per second by command.
  def lines(scenario, fetch, result, basic, alone)
    each = result[:rate] / scenario.all_capsules
    [format("  %<name>-10s %<rate>.3f commands/s = %<each>.3f per capsule, x 100 = %<hundred>.1f; " \
            "Redis CPU %<cpu>.3f ms/s (%<above>.3f above no process)", name: name(fetch), rate: result[:rate],
      each: each, hundred: each * 100, cpu: result[:cpu_ms], above: result[:cpu_ms] - alone[:cpu_ms]) +
      ratio(result, basic, fetch), "             #{by_command(result)}"]
  end

  def name(fetch) = fetch == "basic" ? "BasicFetch" : "LimitFetch"

  def by_command(result)
    result[:calls].sort_by { -_2 }.map { |command, n| "#{command} #{(n / result[:seconds]).round(3)}" }.join(", ")
  end

  def ratio(result, basic, fetch)
    return "" if basic.nil? || fetch == "basic"

    format(" = x%<commands>.3f BasicFetch's commands, x%<cpu>.2f its Redis CPU",
      commands: result[:rate] / basic[:rate], cpu: result[:cpu_ms] / basic[:cpu_ms])
  end
end

require "etc"
$stdout.sync = true
IdleCost.run(ARGV)
