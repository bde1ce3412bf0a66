# frozen_string_literal: true

module LimitFetchDemo
  # Reads what the demo jobs record in Redis (see demo/app/app.rb) and the
  # queues' lengths, in one round trip.
  class Stats
    # Each counter is a Hash of queue name => Integer; the per_worker ones are
    # Hashes of worker name => such a Hash.
    Snapshot = Data.define(:queued, :running, :done, :failed, :max, :running_per_worker, :max_per_worker,
      :finished_at) do
      def total(counter) = public_send(counter).values.sum

      def finished?(plan) = total(:done) + total(:failed) >= plan.total_jobs && total(:running).zero?
    end

    COUNTERS = %i[running done failed max].freeze
    PER_WORKER = {running_per_worker: "running", max_per_worker: "max"}.freeze

    def initialize(plan)
      @plan = plan
    end

    def snapshot
      replies = fetch(commands) # taken in the order of #commands
      Snapshot.new(queued: @plan.queues.to_h { [_1, replies.shift] },
                   **COUNTERS.to_h { [_1, counts(replies.shift)] },
                   **PER_WORKER.to_h { |field| [field, @plan.workers.to_h { [_1, counts(replies.shift)] }] },
        finished_at: replies.shift&.to_f)
    end

    # The gem's busy slots (its busy lists) still held, per queue: none
    # should be left once the processes have stopped cleanly.
    def busy_slots
      lengths = fetch(@plan.queues.map { ["LLEN", Sidekiq::LimitFetch::Keys.busy(_1)] })
      @plan.queues.zip(lengths).to_h.reject { |_queue, length| length.zero? }
    end

    private

    def fetch(commands)
      Sidekiq.redis { |conn| conn.pipelined { |pipe| commands.each { pipe.call(*_1) } } }
    end

    def commands
      @plan.queues.map { ["LLEN", "queue:#{_1}"] } +
        COUNTERS.map { ["HGETALL", "demo:#{_1}"] } +
        PER_WORKER.values.flat_map { |counter| @plan.workers.map { ["HGETALL", "demo:#{counter}:#{_1}"] } } +
        [%w[GET demo:finished_at]]
    end

    # A HGETALL reply (a Hash, or a flat Array on RESP2) as queue => Integer,
    # with every queue present.
    def counts(reply)
      hash = reply.is_a?(Hash) ? reply : reply.each_slice(2).to_h
      @plan.queues.to_h { |queue| [queue, hash.fetch(queue, 0).to_i] }
    end
  end
end
