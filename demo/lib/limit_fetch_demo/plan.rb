# frozen_string_literal: true

module LimitFetchDemo
  # What the demo runs: the queues and limits of the app's config/sidekiq.yml,
  # how many processes, and how many jobs go to each queue: a hot tenant's
  # backlog and other tenants' jobs (queue "tenants", TenantJob's key limit),
  # jobs under a rate (queue "partner_api", RatedJob's rate), and jobs of
  # the queues with queue limits, shared among them.
  class Plan
    CONFIG = File.join(REPO, "demo", "app", "config", "sidekiq.yml")
    WORKERS = %w[worker-1 worker-2].freeze
    TENANTS = "tenants"
    RATED = "partner_api"
    HOT_TENANT = "acme"
    # Each of the other tenants' jobs (fewer than its limit: none waits on
    # its own tenant).
    JOBS_PER_TENANT = 2
    # Of the queues with queue limits, each one's share of their jobs; a
    # queue not named here gets 1.
    JOB_MIX = {"critical" => 3, "api" => 3, "reports" => 2, "default" => 5, "low" => 3}.freeze
    # How long each job sleeps, in milliseconds.
    JOB_MILLIS = (20..150)
    TENANT_MILLIS = 40
    RATED_MILLIS = 20

    Size = Data.define(:queue_jobs, :hot_jobs, :tenants, :rated_jobs)
    # By --small.
    SIZES = {false => Size.new(queue_jobs: 300, hot_jobs: 300, tenants: 30, rated_jobs: 100),
             true => Size.new(queue_jobs: 60, hot_jobs: 60, tenants: 10, rated_jobs: 30)}.freeze

    extend Forwardable

    def_delegators :@config, :queues, :limits, :process_limits, :concurrency
    def_delegators :@size, :hot_jobs, :rated_jobs
    attr_reader :jobs

    def initialize(options, config: SidekiqConfig.load(CONFIG))
      @config = config
      @size = SIZES.fetch(options.small)
      @size = @size.with(queue_jobs: options.jobs) if options.jobs
      @jobs = {TENANTS => hot_jobs + (other_tenants.size * JOBS_PER_TENANT), RATED => rated_jobs}
              .merge(split(@size.queue_jobs))
    end

    def workers = WORKERS

    def total_jobs = jobs.values.sum

    def other_tenants = Array.new(@size.tenants) { format("tenant-%02d", _1 + 1) }

    # The queues whose jobs are DemoJobs, shared by JOB_MIX.
    def limited_queues = queues - [TENANTS, RATED]

    # The arguments of each job of the queue: [queue, millis].
    def job_args(queue)
      Array.new(jobs.fetch(queue)) { [queue, rand(JOB_MILLIS)] }
    end

    # The DemoJobs' arguments in [queue, [args, ...]] batches of up to
    # `size`, taking the queues in turn.
    def batches(size)
      per_queue = limited_queues.map { |queue| job_args(queue).each_slice(size).map { [queue, _1] } }
      Array.new(per_queue.map(&:size).max) { |round| per_queue.filter_map { _1[round] } }.flatten(1)
    end

    def describe
      "#{workers.size} Sidekiq processes x #{concurrency} threads, #{total_jobs} jobs"
    end

    # The jobs pushed, in order.
    def describe_jobs
      rest = jobs.except(TENANTS).map { |queue, count| "#{count} #{queue}" }
      "#{hot_jobs} of tenant #{HOT_TENANT}, then #{other_tenants.size * JOBS_PER_TENANT} of " \
        "#{other_tenants.size} other tenants, #{rest.join(", ")}"
    end

    private

    def split(total)
      shares = limited_queues.to_h { |queue| [queue, JOB_MIX.fetch(queue, 1)] }
      counts = shares.transform_values { |share| total * share / shares.values.sum }
      counts[limited_queues.first] += total - counts.values.sum
      counts
    end
  end
end
