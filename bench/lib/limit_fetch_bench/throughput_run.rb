# frozen_string_literal: true

module LimitFetchBench
  # One throughput run: N jobs pushed before the start, an embedded Sidekiq
  # started, timed until the last job is done. Redis commands, Redis CPU,
  # this process's CPU and round trips are counted over the same window.
  class ThroughputRun
    def initialize(spec)
      @spec = spec
      @variant = Variant[spec["variant"]]
      @jobs = spec["jobs"]
      @recorder = Recorder.current = Recorder.new(expected: @jobs)
      @probe = RedisProbe.new(spec["redis_url"])
    end

    def run
      push
      sidekiq = embedded
      measured = measure(sidekiq.prepare)
      sidekiq.stop
      measured.merge(result(measured))
    end

    private

    def embedded = EmbeddedSidekiq.new(@variant, url: @spec["server_url"], recorder: @recorder, log: @spec["log"])

    def push = Pusher.new(@spec["redis_url"]).tap { _1.bulk(@jobs, @variant.job_seconds) }.close

    def measure(sidekiq)
      window = Window.new(@probe).open
      sidekiq.start
      finished = @recorder.done_within?(@spec["timeout"])
      raise Failure, "#{@recorder.done} of #{@jobs} jobs done after #{@spec["timeout"]} s" unless finished

      window.close(@jobs)
    end

    def result(measured)
      poll_range = Sidekiq::LimitFetch.configuration[:poll_range]
      {"jobs" => @jobs, "jobs_per_s" => @jobs / measured["seconds"], "limit" => @variant.limit,
       "max_running" => @recorder.max_running, "max_in_flight" => @recorder.max_in_flight,
       "utilisation" => @recorder.utilisation(@variant.limit || @variant.concurrency),
       "poll_range" => [poll_range.begin, poll_range.end]}
    end
  end
end
