# frozen_string_literal: true

require "json"
require "sidekiq"

module LimitFetchBench
  # The fair section's jobs (FairRun), loaded by its `sidekiq` processes
  # (CliApp) and by the measuring process, which pushes them through the
  # gem's client middleware. Their classes and declarations are a parameter:
  # ENV[ENV_NAME] holds {"FairJob" => "{concurrency: 10, fair: ...}", ...}
  # as JSON, each declaration Ruby source (it holds lambdas), and .define
  # makes each a class under FairJobs, in queue QUEUE.
  #
  # perform(tenant, millis, run, record): sleeps `millis` ms. A
  # recorded job notes from inside perform, by Redis's clock (TIME, one clock
  # for every process), its start and end, and counts the jobs of its class
  # running at once and the most ever (INCR/DECR with a max, as the specs'
  # Recorder does), under the run's keys (FairJobs.key); every job counts
  # itself done by jid and by tenant. Once the run sets its `fast` key, the
  # jobs still to start skip their sleep: a backlog left once the figures are
  # taken drains at once, every job still run and counted.
  module FairJobs
    QUEUE = "fair"
    ENV_NAME = "LIMIT_FETCH_BENCH_FAIR"
    PREFIX = "bench:fair:"
    # The class's jobs running now, over every run (a run waits for the
    # previous one's last job).
    RUNNING = "#{PREFIX}running".freeze

    # KEYS: running, max (the run's), fast (the run's), started tenants (the run's)
    # ARGV: tenant
    # Returns {start "seconds.micros" by Redis's clock, 1 if fast else 0}.
    START = <<~LUA
      local running = redis.call("INCR", KEYS[1])
      if running > tonumber(redis.call("GET", KEYS[2]) or "0") then redis.call("SET", KEYS[2], running) end
      redis.call("SADD", KEYS[4], ARGV[1])
      local now = redis.call("TIME")
      return {now[1] .. "." .. string.format("%06d", now[2]), redis.call("EXISTS", KEYS[3])}
    LUA

    # KEYS: running, records (the run's), done by jid, done by tenant (the run's)
    # ARGV: jid, tenant, start ("" for a job not recorded: no record, no running count)
    FINISH = <<~LUA
      if ARGV[3] ~= "" then
        redis.call("DECR", KEYS[1])
        local now = redis.call("TIME")
        local finish = now[1] .. "." .. string.format("%06d", now[2])
        redis.call("RPUSH", KEYS[2], ARGV[2] .. " " .. ARGV[3] .. " " .. finish .. " " .. ARGV[1])
      end
      redis.call("HINCRBY", KEYS[3], ARGV[1], 1)
      redis.call("HINCRBY", KEYS[4], ARGV[2], 1)
      return 1
    LUA

    module_function

    # A key of run `run`: records (a list of "tenant start end jid"), done
    # (jid => runs), tenants (tenant => jobs done), max, fast, started.
    def key(run, name) = "#{PREFIX}#{run}:#{name}"

    # Makes each class of `declarations` ({name => Ruby source}); those of
    # ENV[ENV_NAME] by default. A class already made is kept.
    def define(declarations = JSON.parse(ENV.fetch(ENV_NAME, "{}")))
      declarations.each do |name, source|
        next if const_defined?(name, false)

        job_class = const_set(name, Class.new { include Sidekiq::Job, Perform })
        job_class.sidekiq_options(queue: QUEUE, retry: false, limit_fetch: declaration(source))
      end
    end

    # The declaration the Ruby source `source` makes: a bench's parameter,
    # as a command line's -e is; it holds lambdas, which JSON cannot.
    def declaration(source) = eval(source, TOPLEVEL_BINDING, "limit_fetch declaration") # rubocop:disable Security/Eval

    def start(run, tenant)
      keys = [RUNNING, key(run, "max"), key(run, "fast"), key(run, "started")]
      Sidekiq.redis { _1.call("EVAL", START, keys.size, *keys, tenant) }
    end

    def finish(run, tenant, jid, start)
      keys = [RUNNING, key(run, "records"), key(run, "done"), key(run, "tenants")]
      Sidekiq.redis { _1.call("EVAL", FINISH, keys.size, *keys, jid, tenant, start || "") }
    end

    # What every class of FairJobs runs.
    module Perform
      def perform(tenant, millis, run, record)
        start, fast = FairJobs.start(run, tenant) if record
        sleep(millis / 1000.0) unless fast == 1
        FairJobs.finish(run, tenant, jid, start)
      end
    end
  end
end

LimitFetchBench::FairJobs.define
