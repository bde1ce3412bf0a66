# frozen_string_literal: true

module LimitFetchBench
  # bench/delay_proxy.rs in front of Redis: every chunk of bytes waits a fixed
  # time in each direction, so every client (Sidekiq's redis-client and the
  # gem's Rust core alike) sees a longer round trip. The one-way delay is
  # calibrated once so that a PING takes `target_us` longer than without it.
  class DelayProxy
    SOURCE = File.join(REPO, "bench", "delay_proxy.rs")
    BINARY = File.join(REPO, "target", "bench", "delay_proxy")
    PINGS = 300

    attr_reader :url, :delay_us, :direct_rtt_us, :proxied_rtt_us

    def self.build
      return if File.exist?(BINARY) && File.mtime(BINARY) >= File.mtime(SOURCE)

      FileUtils.mkdir_p(File.dirname(BINARY))
      out, status = Open3.capture2e("rustc", "--edition", "2021", "-O", "-C", "strip=symbols", "-o", BINARY, SOURCE)
      raise Failure, "rustc could not build #{SOURCE}:\n#{out}" unless status.success?
    end

    def initialize(redis, dir, target_us:)
      @redis = redis
      @dir = dir
      @target_us = target_us
    end

    # Starts the proxy with the one-way delay that adds about target_us to a
    # round trip (timer wake-ups add a little to the nominal delay).
    def start
      self.class.build
      @direct_rtt_us = rtt_us(@redis.url)
      launch(@target_us / 2)
      overshoot = added_rtt_us - @target_us
      relaunch((@target_us / 2) - (overshoot / 2).round) if overshoot.abs > @target_us * 0.03
      self
    end

    def stop
      LimitFetchTools::ChildProcess.stop([@pid], timeout: 5) if @pid
      @pid = nil
    end

    def added_rtt_us = @proxied_rtt_us - @direct_rtt_us

    def to_h
      {"delay_each_way_us" => @delay_us, "direct_rtt_us" => @direct_rtt_us.round(1),
       "proxied_rtt_us" => @proxied_rtt_us.round(1), "added_rtt_us" => added_rtt_us.round(1)}
    end

    private

    def launch(delay_us)
      @delay_us = delay_us.clamp(0, nil)
      read, write = IO.pipe
      @pid = Process.spawn(BINARY, "0", "127.0.0.1:#{@redis.port}", @delay_us.to_s, out: write,
        err: [File.join(@dir, "proxy.log"), "a"], pgroup: true)
      write.close
      port = read.gets.to_i
      read.close
      raise Failure, "the delay proxy did not start" unless port.positive?

      @url = "redis://127.0.0.1:#{port}/0"
      @proxied_rtt_us = rtt_us(@url)
    end

    def relaunch(delay_us)
      stop
      launch(delay_us)
    end

    # Median PING round trip, in microseconds.
    def rtt_us(url)
      client = RedisClient.new(url: url)
      client.call("PING")
      samples = Array.new(PINGS) do
        started = LimitFetchBench.monotonic
        client.call("PING")
        (LimitFetchBench.monotonic - started) * 1e6
      end
      Stats.median(samples)
    ensure
      client&.close
    end
  end
end
