# frozen_string_literal: true

module LimitFetchChaos
  # Pushes the jobs, ChaosJob.perform(queue, millis): keeps BACKLOG jobs
  # waiting in each queue, so that every thread is busy and the limited
  # queues stay at their limits, until every queue had its share of --jobs
  # or --duration is over.
  class Feeder
    BACKLOG = 50

    attr_reader :jids

    def initialize(plan, sidekiq)
      @plan = plan
      @sidekiq = sidekiq
      @client = Sidekiq::Client.new(config: sidekiq)
      @pushed = Hash.new(0)
      @jids = []
    end

    def feed(elapsed)
      return if done?(elapsed)

      waiting = @sidekiq.redis { |conn| conn.pipelined { |pipe| queues.each { pipe.call("LLEN", "queue:#{_1}") } } }
      queues.zip(waiting).each { |queue, count| push(queue, [BACKLOG - count, left(queue)].compact.min) }
    end

    def done?(elapsed)
      over = @plan.options.duration && elapsed >= @plan.options.duration
      over || queues.all? { left(_1)&.zero? }
    end

    private

    def queues = @plan.queues

    # Jobs the queue has still to get; nil: no quota.
    def left(queue)
      quota = @plan.quota(queue)
      quota && (quota - @pushed[queue])
    end

    def push(queue, count)
      return unless count.positive?

      args = Array.new(count) { [queue, @plan.job_millis] }
      @jids.concat(@client.push_bulk("class" => "ChaosJob", "queue" => queue, "args" => args))
      @pushed[queue] += count
    end
  end
end
