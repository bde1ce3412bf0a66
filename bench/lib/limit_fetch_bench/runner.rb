# frozen_string_literal: true

module LimitFetchBench
  # Runs the bench from start to end, and stops (or removes) whatever it
  # started, whatever happens: success, failure, Ctrl-C.
  class Runner
    def initialize(options)
      @options = options
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
      baseline = build_baseline
      @plan = Plan.new(@options, rev: baseline&.rev, keyed_twins: baseline&.keyed_twins?(@options))
      started = LimitFetchBench.monotonic
      start_servers
      steps = @plan.steps
      steps.each_with_index { |step, index| perform(step, index + 1, steps.size) }
      finish(LimitFetchBench.monotonic - started)
    ensure
      stop
    end

    def stop
      @proxy&.stop
      @redis&.stop
      @baseline&.remove
    end

    # The baseline (--baseline), built; nil without one.
    def build_baseline
      return unless @options.baseline

      @baseline = Baseline.new(@options.baseline)
      say "building the gem at #{@options.baseline} in #{Baseline::DIR} (the first build takes minutes)"
      @baseline.build(File.join(@dir, "baseline-build.log"))
      say "baseline: #{@baseline.rev} #{@baseline.to_h["subject"]}"
      @baseline
    end

    def start_servers
      @redis = LimitFetchTools::RedisServer.new(dir: @dir).start
      say "#{@redis.program} #{@redis.version} on port #{@redis.port}"
      return unless @options.section?("delayed")

      @proxy = DelayProxy.new(@redis, @dir, target_us: @options.delay_us * 2).start
      say format("delay proxy: %<d>d us each way; PING %<a>.0f us direct, %<b>.0f us through it",
        d: @proxy.delay_us, a: @proxy.direct_rtt_us, b: @proxy.proxied_rtt_us)
    end

    def perform(step, number, total)
      @redis.call("FLUSHDB")
      log = File.join(@dir, format("run-%03d.log", number))
      result = step.section == "fetch" ? fetch_cost(step, log) : measure(step, log)
      @runs << result.merge(step.to_h.transform_keys(&:to_s))
      say format("[%<n>3d/%<t>d] %<text>s", n: number, t: total, text: Progress.line(@runs.last))
    end

    def measure(step, log)
      spec = {"variant" => step.variant, "redis_url" => @redis.url, "log" => log, "server_url" => server_url(step),
              **lib(step)}
      return idle(spec, log) if step.section == "idle"

      spec = spec.merge(jobs_spec(step))
      Measurement.run(spec, log: log, timeout: spec["timeout"] + 60)
    end

    # The measuring process's kind of run (Child::RUNS) and its jobs.
    def jobs_spec(step)
      jobs = @plan.jobs(step.section, step.variant)
      spec = {"kind" => Variant[step.variant].workload&.to_s || "throughput", "jobs" => jobs,
              "hot_jobs" => @options.hot_jobs, "keys" => @options.keys, "timeout" => timeout(step.variant, jobs)}
      spec.merge(SectionSpec.of(step, @options, jobs))
    end

    def idle(spec, log)
      trickle = Trickle.new(@redis.url, @options.idle_seconds)
      spec = spec.merge("kind" => "idle", "seconds" => @options.idle_seconds)
      Measurement.run(spec, log: log, timeout: (@options.idle_seconds * 2) + 60, &trickle.method(:call))
    end

    def timeout(variant, jobs) = 60 + (jobs * [Variant[variant].job_seconds, 0.005].max)

    def server_url(step) = step.section == "delayed" ? @proxy.url : @redis.url

    # The measuring process loads the baseline's gem for its steps.
    def lib(step) = step.build ? {"lib" => @baseline.lib} : {}

    def fetch_cost(step, log)
      spec = fetch_spec(step, log)
      say "fetch cost#{" @#{step.build}" if step.build}: filling #{spec["deep"]} jobs and #{spec["wide"]} queues, " \
          "then #{spec["runs"]} x 4 scenarios x #{step.build ? 2 : 3} variants x #{spec["iterations"]} calls"
      Measurement.run(spec, log: log, timeout: 300 + (spec["runs"] * 12 * spec["iterations"] * 0.01))
    end

    # With a baseline, one run per process (Plan); its processes measure no
    # BasicFetch: Sidekiq's code, the same in both, measured by this checkout's.
    def fetch_spec(step, log)
      {"kind" => "fetch", "redis_url" => @redis.url, "log" => log, "runs" => step.round ? 1 : @options.runs,
       "iterations" => @options.fetch_iterations, "deep" => @options.deep_queue, "wide" => @options.wide_queues,
       "limit_fetch_only" => !step.build.nil?, **lib(step)}
    end

    def finish(seconds)
      summary = Summary.new(@runs, options: @options, setup: setup, seconds: seconds).to_h
      Markdown.new(summary).write(@options.output).each { say "wrote #{_1}" }
      puts "", Markdown.new(summary).render
      exit_status(summary["limit_checks"].reject { _1["ok"] })
    end

    def setup = {"redis" => @redis.description, "proxy" => @proxy&.to_h, "baseline" => @baseline&.to_h}

    def exit_status(violations)
      violations.each { warn "bin/bench: LIMIT EXCEEDED: #{JSON.generate(_1)}" }
      violations.empty? ? 0 : 1
    end

    def say(text) = puts("==> #{text}")
  end
end
