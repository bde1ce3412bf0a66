# frozen_string_literal: true

module LimitFetchDemo
  # What the demo runs: the queues and limits of the app's config/sidekiq.yml,
  # how many processes, and how many jobs go to each queue.
  class Plan
    CONFIG = File.join(REPO, "demo", "app", "config", "sidekiq.yml")
    WORKERS = %w[worker-1 worker-2].freeze
    # Each queue's share of the jobs; a queue not named here gets 1.
    JOB_MIX = {"critical" => 3, "api" => 3, "reports" => 2, "default" => 5, "low" => 3}.freeze
    # How long each job sleeps, in milliseconds.
    JOB_MILLIS = (20..150)

    extend Forwardable

    def_delegators :@config, :queues, :limits, :process_limits, :concurrency
    attr_reader :jobs

    def initialize(total_jobs, config: SidekiqConfig.load(CONFIG))
      @config = config
      @jobs = split(total_jobs)
    end

    def workers = WORKERS

    def total_jobs = jobs.values.sum

    # The arguments of each job of the queue: [queue, millis].
    def job_args(queue)
      Array.new(jobs.fetch(queue)) { [queue, rand(JOB_MILLIS)] }
    end

    # Every job's arguments in [queue, [args, ...]] batches of up to `size`,
    # taking the queues in turn.
    def batches(size)
      per_queue = queues.map { |queue| job_args(queue).each_slice(size).map { [queue, _1] } }
      Array.new(per_queue.map(&:size).max) { |round| per_queue.filter_map { _1[round] } }.flatten(1)
    end

    def describe
      "#{workers.size} Sidekiq processes x #{concurrency} threads, #{total_jobs} jobs of " \
        "#{JOB_MILLIS.min}-#{JOB_MILLIS.max} ms"
    end

    private

    def split(total)
      shares = queues.to_h { |queue| [queue, JOB_MIX.fetch(queue, 1)] }
      counts = shares.transform_values { |share| total * share / shares.values.sum }
      counts[queues.first] += total - counts.values.sum
      counts
    end
  end
end
