# frozen_string_literal: true

require "limit_fetch_bench/profile_ways"
require "limit_fetch_bench/profile_keyed_ways"

module LimitFetchBench
  # bench/profile.rb: runs each of ProfileWays on a Redis of its own and
  # prints, per job, Redis CPU, commands and each command's time.
  class Profile
    JOBS = Integer(ENV.fetch("PROFILE_JOBS", "40000"))
    # PROFILE_THREADS=1: one client, whose every request wakes Redis by
    # itself (as on a quiet machine, where few requests arrive together).
    THREADS = Integer(ENV.fetch("PROFILE_THREADS", "10"))

    # `only`: a pattern of the ways' labels to run (all by default).
    def initialize(rounds:, only: nil)
      @rounds = rounds
      @only = only
      @server = LimitFetchTools::RedisServer.new
    end

    def run
      @server.start
      @probe = RedisProbe.new(@server.url)
      ways = selected(load_library)
      @rounds.times do
        ways.each { |label, (way, limit, keyed)| puts line(label, measure(way, limit, keyed)) }
        puts
      end
    ensure
      @server.stop
      @server.remove
    end

    private

    # The ways to run: all, or those whose label matches `only`.
    def selected(fetch)
      ways = ProfileWays.new(fetch).all.merge(ProfileKeyedWays.new.all)
      @only ? ways.select { |label, _| label.match?(@only) } : ways
    end

    # The gem loads its function library on first use (setting a job limit
    # runs its release script); returns the fetch script's function name.
    # ProfileFloor's library goes in too, before fill's first dump, which
    # carries every library through its FLUSHALL.
    def load_library
      @probe.call("FUNCTION", "LOAD", "REPLACE", ProfileFloor::LIBRARY)
      config = RedisClient.config(url: @server.url)
      settings = Sidekiq::LimitFetch::RedisOptions.from_client_config(config)
      Sidekiq::LimitFetch::NativeAdmin.new(settings).set_job_limit("class:Profile", 1)
      names = @probe.call("FUNCTION", "LIST").flat_map { |lib| lib["functions"].map { _1["name"] } }
      names.find { _1.start_with?("limit_fetch_fetch_") } or raise "the gem's fetch function is not loaded"
    end

    def measure(way, limit, keyed)
      fill(limit, keyed)
      @probe.reset
      THREADS.times.map do |thread|
        Thread.new do
          client = RedisClient.new(url: @server.url)
          (JOBS / THREADS).times.reduce(nil) { |last, _| way.call(client, thread, last) }
        end
      end.each(&:join)
      @probe.read
    end

    def fill(limit, keyed)
      library = @probe.call("FUNCTION", "DUMP")
      @probe.call("FLUSHALL")
      @probe.call("FUNCTION", "RESTORE", library, "REPLACE")
      @probe.call("SET", ProfileWays::Keys.limit(ProfileWays::QUEUE), limit) if limit
      JOBS.times.each_slice(1000) do |slice|
        @probe.call("LPUSH", ProfileWays::LIST, *slice.map { |i| ProfileWays.job(i, keyed) })
      end
    end

    def line(label, read)
      commands = read["calls"].except("fcall").values.sum
      format("%<label>-38s Redis CPU %<cpu>5.1f µs/job, %<commands>4.1f commands/job: %<each>s",
        label: label, cpu: read["cpu"] * 1e6 / JOBS, commands: commands.to_f / JOBS, each: each_command(read))
    end

    # "name calls-per-job×µs-per-call", the costliest first.
    def each_command(read)
      calls = read["calls"]
      read["usec"].sort_by { -_2 }.map do |name, usec|
        format("%<name>s %<n>.2f×%<us>.2f µs", name: name, n: calls[name].to_f / JOBS, us: usec.to_f / calls[name])
      end.join(", ")
    end
  end
end
