# frozen_string_literal: true

module LimitFetchBench
  # The cost of one fetch, with `retrieve_work` called directly on a fetcher
  # (no Sidekiq processors), `iterations` times per run: the wall time of
  # each call, the Redis commands it causes and the time Redis spends in the
  # fetch command (BRPOP, or the gem's EVALSHA). Between calls, untimed, the
  # job is acknowledged and pushed back where it was, so that every call
  # sees the same queues. Every run of every scenario alternates the
  # variants; all runs happen in this one process.
  class FetchCostRun
    WARMUP = 50
    FILL_CHUNK = 100_000
    FILL = "for i = 1, tonumber(ARGV[1]) do redis.call('LPUSH', KEYS[1], ARGV[2]) end"
    LIMIT = 1_000

    def initialize(spec)
      @spec = spec
      @probe = RedisProbe.new(spec["redis_url"])
      @scenarios = FetchScenario.all(deep: spec["deep"], wide: spec["wide"])
      @variants = FetchVariant.all.select { !spec["limit_fetch_only"] || _1.limit_fetch? }
      @capsules = {}
    end

    def run
      @scenarios.each { fill(_1) }
      runs = (1..@spec["runs"]).flat_map do |round|
        @scenarios.product(@variants).map { measure(*_1).merge("round" => round) }
      end
      {"runs" => runs, "iterations" => @spec["iterations"]}.merge(labels)
    ensure
      @capsules.each_value { Sidekiq::LimitFetch.shutdown(_1) }
    end

    private

    def labels
      {"scenarios" => @scenarios.to_h { [_1.key, _1.label] },
       "variants" => @variants.to_h { [_1.key, _1.label] }}
    end

    def fill(scenario)
      payload = JSON.generate("retry" => false, "queue" => scenario.filled, "class" => Pusher::JOB, "args" => [0],
        "jid" => SecureRandom.hex(12), "created_at" => 1_700_000_000_000, "enqueued_at" => 1_700_000_000_000)
      left = scenario.depth
      while left.positive?
        chunk = [left, FILL_CHUNK].min
        @probe.call("EVAL", FILL, 1, "queue:#{scenario.filled}", chunk, payload)
        left -= chunk
      end
    end

    def measure(scenario, variant)
      fetcher = fetcher(scenario, variant)
      limits(scenario, variant.limited)
      WARMUP.times { cycle(fetcher) }
      @probe.reset
      seconds = Array.new(@spec["iterations"]) { cycle(fetcher) }
      summarize(scenario, variant, seconds, @probe.read)
    ensure
      limits(scenario, false)
    end

    def summarize(scenario, variant, seconds, redis)
      calls = seconds.size
      micros = seconds.map { _1 * 1e6 }
      {"scenario" => scenario.key, "variant" => variant.key, "calls" => calls, "mean_us" => Stats.mean(micros),
       "p50_us" => Stats.median(micros), "p99_us" => Stats.percentile(micros, 99)}
        .merge(redis_side(variant, calls, redis))
    end

    # Redis commands per call, without the untimed bookkeeping (the RPUSH
    # back, and the gem's LREM on acknowledge), and Redis time in the fetch
    # (FCALL, or a baseline build's EVALSHA).
    def redis_side(variant, calls, redis)
      bookkeeping = calls * (variant.limit_fetch? ? 2 : 1)
      server = redis["usec"].values_at(*(variant.limit_fetch? ? %w[fcall evalsha] : %w[brpop])).compact.sum
      {"commands_per_call" => (redis["calls"].values.sum - bookkeeping).fdiv(calls),
       "redis_us_per_call" => server.fdiv(calls)}
    end

    def cycle(fetcher)
      started = LimitFetchBench.monotonic
      work = fetcher.retrieve_work
      elapsed = LimitFetchBench.monotonic - started
      raise Failure, "retrieve_work returned nothing" unless work

      work.acknowledge
      @probe.call("RPUSH", work.queue, work.job)
      elapsed
    end

    def fetcher(scenario, variant)
      capsule = @capsules[scenario.key] ||= capsule_for(scenario)
      variant.limit_fetch? ? Sidekiq::LimitFetch.new(capsule) : Sidekiq::BasicFetch.new(capsule)
    end

    def capsule_for(scenario)
      config = Sidekiq::Config.new(error_handlers: [])
      config.redis = {url: @spec["redis_url"]}
      config.logger = Sidekiq::Logger.new(@spec["log"], level: :warn)
      config.queues = scenario.queues
      config.concurrency = 1
      config.default_capsule.tap { Sidekiq::LimitFetch.setup(_1) }
    end

    def limits(scenario, set)
      keys = scenario.queues.map { GemKeys.limit(_1) }
      return @probe.call("DEL", *keys) unless set

      @probe.call("MSET", *keys.flat_map { [_1, LIMIT] })
    end
  end
end
