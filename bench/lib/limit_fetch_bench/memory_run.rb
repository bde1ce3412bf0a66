# frozen_string_literal: true

require "limit_fetch_bench/cli_app"
require "limit_fetch_bench/cli_fleet"
require "limit_fetch_bench/memory_jobs"

module LimitFetchBench
  # One run of the memory section (MemoryVariants): one `sidekiq` process
  # started and registered, then no-op jobs pushed in batches of BATCH (at
  # most BACKLOG waiting; MemoryVariants), up to each of the spec's checkpoints (jobs run
  # in all) in turn; at each, once every job pushed has run and SETTLE
  # seconds after, the process's memory as Linux counts it: VmRSS, VmHWM
  # (its peak), RssAnon, RssFile and Threads of /proc/PID/status, and Rss,
  # Pss, Anonymous and Private_* of /proc/PID/smaps_rollup, in kB.
  class MemoryRun
    STATUS = %w[VmRSS VmHWM RssAnon RssFile Threads].freeze
    ROLLUP = %w[Rss Pss Anonymous Private_Clean Private_Dirty].freeze

    def initialize(spec)
      @spec = spec
      @variant = Variant[spec["variant"]]
      @dir = File.dirname(spec["log"])
      @redis = RedisClient.config(url: spec["redis_url"]).new_client
    end

    def run
      @fleet = CliFleet.new(app, @spec).start(@redis)
      @client = client
      @pushed = 0
      {"jobs" => @spec["checkpoints"].last, "checkpoints" => @spec["checkpoints"].map { checkpoint(_1) }}
    ensure
      @fleet&.stop
      @config&.redis_pool&.shutdown(&:close)
      @redis.close
    end

    private

    # The app of the variant's build, or without the gem, made by the first run that needs it.
    def app
      gem = (@spec["lib"] ? File.dirname(@spec["lib"]) : REPO) if @variant.limit_fetch?
      name = "memory_app_#{@variant.build || "this"}_#{@variant.fetch}"
      CliApp.new(File.join(@dir, name), jobs: File.join(__dir__, "memory_jobs"), queue: MemoryJob::QUEUE, gem:).create
    end

    def client
      @config = Sidekiq::Config.new
      @config.redis = {url: @spec["redis_url"]}
      Sidekiq::Client.new(config: @config)
    end

    def checkpoint(jobs)
      deadline = LimitFetchBench.monotonic + @spec["timeout"]
      until (done = @redis.call("GET", MemoryJob::DONE).to_i) >= jobs
        raise Failure, "#{done} of #{jobs} jobs done in time" if LimitFetchBench.monotonic > deadline

        push([jobs - @pushed, MemoryVariants::BACKLOG - (@pushed - done), MemoryVariants::BATCH].min)
        @fleet.check!
        sleep 0.05
      end
      sleep MemoryVariants::SETTLE
      memory(jobs)
    end

    def push(count)
      return unless count.positive?

      @client.push_bulk("class" => "LimitFetchBench::MemoryJob", "queue" => MemoryJob::QUEUE,
        "args" => Array.new(count) { [] })
      @pushed += count
    end

    def memory(jobs)
      pid = @fleet.pids.first
      {"jobs" => jobs, **fields("/proc/#{pid}/status", STATUS), **fields("/proc/#{pid}/smaps_rollup", ROLLUP)}
    end

    # {"VmRSS" => 40123, ...}: the named fields' numbers (kB; Threads a count).
    def fields(path, names)
      File.foreach(path).each_with_object({}) do |line, found|
        name, value = line.split(":", 2)
        found[name] = value.to_i if names.include?(name)
      end
    end
  end
end
