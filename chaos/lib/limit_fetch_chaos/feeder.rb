# frozen_string_literal: true

module LimitFetchChaos
  # Pushes the jobs, ChaosJob.perform(queue, millis), and on queue k
  # KeyedChaosJob.perform(queue, millis, tenant) for a random tenant: keeps
  # BACKLOG jobs waiting in each queue (on k, counting the jobs parked at their
  # job limits), so that every thread is busy, the limited queues stay at
  # their limits and keyed jobs are parked, until every queue had its share
  # of --jobs or --duration is over.
  #
  # KeyedChaosJob is pushed by its class, so that the gem's client middleware
  # computes the limits its jobs carry; Carried counts the pushes whose
  # payload then has them.
  class Feeder
    BACKLOG = 50

    # Client middleware, after the gem's: tallies KeyedChaosJob's payloads by
    # whether they carry their job limits ("limit_fetch"), and keeps one.
    class Carried
      include Sidekiq::ClientMiddleware

      def initialize(tally)
        @tally = tally
      end

      def call(_job_class, job, _queue, _redis_pool)
        if job["class"].to_s == KeyedChaosJob.name
          limits = job[Sidekiq::LimitFetch::ClientMiddleware::FIELD]
          @tally[limits.is_a?(Array) && limits.any? ? :with : :without] += 1
          @tally[:sample] ||= limits
        end
        yield
      end
    end

    # The parked lists of KeyedChaosJob's job limits.
    LIMIT_IDS = ["class:KeyedChaosJob", *KeyedChaosJob::TENANTS.map { "key:KeyedChaosJob##{_1}" }].freeze
    PARKED = LIMIT_IDS.map { "#{PREFIX}limit:#{_1}:parked" }.freeze

    attr_reader :jids

    def initialize(plan, sidekiq)
      @plan = plan
      @sidekiq = sidekiq
      @carried = {with: 0, without: 0, sample: nil}
      install_middleware
      @client = Sidekiq::Client.new(config: sidekiq)
      @pushed = Hash.new(0)
      @jids = []
      @keyed = []
      @parked = {most: 0, ticks: 0, ticks_parked: 0}
    end

    def feed(elapsed)
      return if done?(elapsed)

      queued, parked = waiting
      note(parked)
      queues.zip(queued).each do |queue, count|
        count += parked if queue == KeyedChaosJob::QUEUE
        push(queue, [BACKLOG - count, left(queue)].compact.min)
      end
    end

    def done?(elapsed)
      over = @plan.options.duration && elapsed >= @plan.options.duration
      over || queues.all? { left(_1)&.zero? }
    end

    # KeyedChaosJob's jids, its pushes by whether their payload carried the
    # job limits (with, without), one payload's limits (sample), and how many
    # of its jobs were parked at most, and in how many of the feeder's ticks
    # any were.
    def keyed_h
      {jids: @keyed, carried: @carried[:with], not_carried: @carried[:without],
       sample: @carried[:sample], parked_most: @parked[:most], ticks_parked: @parked[:ticks_parked],
       ticks: @parked[:ticks]}
    end

    private

    def queues = @plan.queues

    # The gem's client middleware, as it installs it in Sidekiq's own
    # configuration (the driver's is one of its own), then Carried.
    def install_middleware
      @sidekiq.client_middleware do |chain|
        chain.add(Sidekiq::LimitFetch::ClientMiddleware)
        chain.add(Carried, @carried)
      end
    end

    # Each queue's length, and how many keyed jobs are parked.
    def waiting
      replies = @sidekiq.redis do |conn|
        conn.pipelined do |pipe|
          queues.each { pipe.call("LLEN", "queue:#{_1}") }
          PARKED.each { pipe.call("LLEN", _1) }
        end
      end
      [replies.first(queues.size), replies.drop(queues.size).sum]
    end

    def note(parked)
      @parked[:ticks] += 1
      @parked[:ticks_parked] += 1 if parked.positive?
      @parked[:most] = [@parked[:most], parked].max
    end

    # Jobs the queue has still to get; nil: no quota.
    def left(queue)
      quota = @plan.quota(queue)
      quota && (quota - @pushed[queue])
    end

    def push(queue, count)
      return unless count.positive?

      @jids.concat(queue == KeyedChaosJob::QUEUE ? push_keyed(count) : push_plain(queue, count))
      @pushed[queue] += count
    end

    def push_plain(queue, count)
      args = Array.new(count) { [queue, @plan.job_millis] }
      @client.push_bulk("class" => "ChaosJob", "queue" => queue, "args" => args)
    end

    def push_keyed(count)
      args = Array.new(count) { [KeyedChaosJob::QUEUE, @plan.job_millis, @plan.tenant] }
      @client.push_bulk("class" => KeyedChaosJob, "args" => args).tap { @keyed.concat(_1) }
    end
  end
end
