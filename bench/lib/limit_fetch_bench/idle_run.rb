# frozen_string_literal: true

module LimitFetchBench
  # One idle run, a conversation with the driver:
  # 1. an embedded Sidekiq starts on an empty queue and settles;
  # 2. idle cost: nothing to do for `seconds`; Redis commands per second,
  #    Redis CPU and this process's CPU are measured;
  # 3. it prints READY; the driver pushes single jobs at random gaps for
  #    `seconds` and answers "PUSHED <count>";
  # 4. once those jobs are done: pickup latencies (start - push time);
  # 5. for LimitFetch, how soon a slot another process frees is taken
  #    (SlotHandoff).
  class IdleRun
    SETTLE = 1.0

    def initialize(spec)
      @spec = spec
      @variant = Variant[spec["variant"]]
      @recorder = Recorder.current = Recorder.new
      @probe = RedisProbe.new(spec["redis_url"])
    end

    def run
      sidekiq = EmbeddedSidekiq.new(@variant, url: @spec["server_url"], recorder: @recorder, log: @spec["log"])
      sidekiq.prepare.start
      sleep SETTLE
      idle = idle_cost
      pushed = converse
      finished = @recorder.done_within?(10)
      handoffs = handoffs(sidekiq) if finished
      sidekiq.stop
      raise Failure, "#{@recorder.done} of #{pushed} jobs done" unless finished

      result(idle, pushed).merge("handoff_ms" => handoffs)
    end

    private

    # Milliseconds, for LimitFetch only.
    def handoffs(sidekiq)
      return nil unless @variant.limit_fetch?

      SlotHandoff.new(sidekiq, @recorder, @spec["server_url"]).run.map { _1 * 1e3 }
    end

    def result(idle, pushed)
      {"idle" => idle, "pushed" => pushed, "latencies_ms" => @recorder.latencies.map { _1 * 1e3 },
       "max_running" => @recorder.max_running, "max_in_flight" => @recorder.max_in_flight, "limit" => @variant.limit}
    end

    def idle_cost = Window.idle_cost(@probe, @spec["seconds"])

    def converse
      Child.protocol.puts "READY"
      line = $stdin.gets.to_s
      raise Failure, "unexpected answer from the driver: #{line.inspect}" unless line =~ /\APUSHED (\d+)/

      @recorder.expect(Regexp.last_match(1).to_i)
      Regexp.last_match(1).to_i
    end
  end
end
