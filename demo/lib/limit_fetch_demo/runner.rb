# frozen_string_literal: true

module LimitFetchDemo
  # Runs the demo from start to end, and stops whatever it started, whatever
  # happens: success, failure, Ctrl-C or TERM.
  class Runner
    BATCH = 10

    def initialize(options)
      @options = options
      @plan = Plan.new(options)
    end

    def run
      trap_signals
      Dir.mktmpdir("limit-fetch-demo-") { run_in(_1) }
    rescue Interrupt
      warn "\nbin/demo: interrupted; stopped the Sidekiq processes and Redis, removed the app directory."
      130
    end

    private

    def run_in(dir)
      demo(dir)
    rescue Failure => e
      report(e)
    ensure
      cleanup
    end

    def demo(dir)
      start(dir)
      enqueued_at = enqueue
      @watch = Watch.new(@plan, @workers, timeout: @options.timeout, screenshot: @screenshot)
      last = @watch.run
      @screenshot&.finish
      say "Stopping the Sidekiq processes"
      @workers.stop
      Summary.new(@plan, last, spotlight: spotlight_summary, enqueued_at: enqueued_at,
        busy_slots: Stats.new(@plan).busy_slots).print
    end

    def start(dir)
      say "Writing the demo app in #{dir} and installing its bundle"
      app = App.new(dir, gems: WebUi::GEMS + (@options.screenshot ? Screenshot::GEMS : [])).create
      app.load_bundle
      require File.join(dir, "app.rb") # its job classes, whose limits the gem works out at push
      start_redis(dir)
      start_web
      start_workers(app)
    end

    # Sidekiq's Web UI with the Limits tab, served while the demo runs.
    def start_web
      @web = WebUi.start
      say "Sidekiq's Web UI is up; watch the queues live on its Limits tab: #{@web.limits_url}?refresh=2"
      @screenshot = Screenshot.new(@options.screenshot, @web.limits_url) if @options.screenshot
    end

    def start_redis(dir)
      @redis = LimitFetchTools::RedisServer.new(dir: dir).start
      Sidekiq.configure_client do |config|
        config.redis = {url: @redis.url}
        config.logger.level = :warn
      end
      say "redis-server is up on #{@redis.url}"
    end

    def start_workers(app)
      say "Starting #{@plan.workers.size} Sidekiq processes (#{@plan.workers.join(", ")})"
      @workers = Workers.new(app, @redis.url, @plan.workers).start
      @workers.wait_until_running(timeout: 60)
    end

    # Pushes every job: the hot tenant's backlog first, then the other
    # tenants' jobs behind it, the rated jobs, and a batch per queue with
    # queue limits in turn so that all queues start at once; returns when it
    # started, on the clock the jobs use.
    def enqueue
      say "Enqueuing #{@plan.total_jobs} jobs: #{@plan.describe_jobs}"
      started = Time.now.to_f
      push_tenants
      Sidekiq::Client.push_bulk("class" => RatedJob, "args" => Array.new(@plan.rated_jobs) { [Plan::RATED_MILLIS] })
      @plan.batches(BATCH).each do |queue, args|
        Sidekiq::Client.push_bulk("class" => "DemoJob", "queue" => queue, "args" => args)
      end
      started
    end

    def push_tenants
      Sidekiq::Client.push_bulk("class" => TenantJob,
        "args" => Array.new(@plan.hot_jobs) { [Plan::HOT_TENANT, Plan::TENANT_MILLIS, Time.now.to_f] })
      others = @plan.other_tenants * Plan::JOBS_PER_TENANT
      Sidekiq::Client.push_bulk("class" => TenantJob,
        "args" => others.map { [_1, Plan::TENANT_MILLIS, Time.now.to_f] })
    end

    def spotlight_summary
      spotlight = @watch.spotlight
      SpotlightSummary.new(@plan, spotlight.final, rated_starts: spotlight.rated_starts,
        most_hot_parked: spotlight.sample.most_hot_parked)
    end

    def report(error)
      @watch&.close
      warn "\nbin/demo: FAILED: #{error.message}"
      warn "\nThe Sidekiq processes' logs end with:\n#{@workers.logs}" if @workers
      1
    end

    def trap_signals
      %w[INT TERM].each { |signal| trap(signal) { raise Interrupt } }
    end

    def cleanup
      %w[INT TERM].each { trap(_1, "IGNORE") }
      @watch&.close
      @workers&.stop
      @web&.stop
      @redis&.stop
    end

    def say(message) = puts("==> #{message}")
  end
end
