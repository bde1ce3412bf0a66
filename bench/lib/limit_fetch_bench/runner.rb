# frozen_string_literal: true

module LimitFetchBench
  # Runs the bench from start to end, and stops whatever it started, whatever
  # happens: success, failure, Ctrl-C.
  class Runner
    def initialize(options)
      @options = options
      @plan = Plan.new(options)
      @runs = []
    end

    def run
      Dir.mktmpdir("limit-fetch-bench-") { run_in(_1) }
    rescue Failure => e
      warn "bin/bench: #{e.message}"
      1
    rescue Interrupt
      warn "\nbin/bench: interrupted"
      130
    end

    private

    def run_in(dir)
      @dir = dir
      started = LimitFetchBench.monotonic
      start_servers
      steps = @plan.steps
      steps.each_with_index { |step, index| perform(step, index + 1, steps.size) }
      finish(LimitFetchBench.monotonic - started)
    ensure
      @proxy&.stop
      @redis&.stop
    end

    def start_servers
      @redis = LimitFetchTools::RedisServer.new(dir: @dir).start
      say "redis-server #{@redis.version} on port #{@redis.port}"
      return unless @options.section?("delayed")

      @proxy = DelayProxy.new(@redis, @dir, target_us: @options.delay_us * 2).start
      say format("delay proxy: %<d>d us each way; PING %<a>.0f us direct, %<b>.0f us through it",
        d: @proxy.delay_us, a: @proxy.direct_rtt_us, b: @proxy.proxied_rtt_us)
    end

    def perform(step, number, total)
      @redis.call("FLUSHDB")
      log = File.join(@dir, format("run-%03d.log", number))
      result = step.section == "fetch" ? fetch_cost(log) : measure(step, log)
      @runs << result.merge("section" => step.section, "variant" => step.variant, "round" => step.round)
      say format("[%<n>3d/%<t>d] %<text>s", n: number, t: total, text: Progress.line(@runs.last))
    end

    def measure(step, log)
      spec = {"variant" => step.variant, "redis_url" => @redis.url, "log" => log,
              "server_url" => step.section == "delayed" ? @proxy.url : @redis.url}
      return idle(spec, log) if step.section == "idle"

      jobs = @plan.jobs(step.section, step.variant)
      spec = spec.merge("kind" => "throughput", "jobs" => jobs, "timeout" => timeout(step.variant, jobs))
      Measurement.run(spec, log: log, timeout: spec["timeout"] + 60)
    end

    def idle(spec, log)
      trickle = Trickle.new(@redis.url, @options.idle_seconds)
      spec = spec.merge("kind" => "idle", "seconds" => @options.idle_seconds)
      Measurement.run(spec, log: log, timeout: (@options.idle_seconds * 2) + 60, &trickle.method(:call))
    end

    def timeout(variant, jobs) = 60 + (jobs * [Variant[variant].job_seconds, 0.005].max)

    def fetch_cost(log)
      spec = fetch_spec(log)
      say "fetch cost: filling #{spec["deep"]} jobs and #{spec["wide"]} queues, then " \
          "#{spec["runs"]} x 4 scenarios x 3 variants x #{spec["iterations"]} calls"
      Measurement.run(spec, log: log, timeout: 300 + (spec["runs"] * 12 * spec["iterations"] * 0.01))
    end

    def fetch_spec(log)
      {"kind" => "fetch", "redis_url" => @redis.url, "log" => log, "runs" => @options.runs,
       "iterations" => @options.fetch_iterations, "deep" => @options.deep_queue, "wide" => @options.wide_queues}
    end

    def finish(seconds)
      summary = Summary.new(@runs, options: @options, proxy: @proxy, redis_version: @redis.version,
        seconds: seconds).to_h
      Report.new(summary, @options.output).write.each { say "wrote #{_1}" }
      puts "", Markdown.new(summary).render
      exit_status(summary["limit_checks"].reject { _1["ok"] })
    end

    def exit_status(violations)
      violations.each { warn "bin/bench: LIMIT EXCEEDED: #{JSON.generate(_1)}" }
      violations.empty? ? 0 : 1
    end

    def say(text) = puts("==> #{text}")
  end
end
