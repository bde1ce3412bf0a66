# frozen_string_literal: true

require "sidekiq"
require_relative "tracked_job"

module LimitFetchSpec
  # A LimitedCapacity job draining a backlog of work items held in a Redis
  # list: perform_work(seconds, gate = nil) takes one item and records it
  # (Recorder, with the item as its jid) for +seconds+, or until the gate
  # opens. An item "boom" raises instead.
  class CapacityJob
    include Sidekiq::Job
    include Sidekiq::LimitFetch::LimitedCapacity

    QUEUE = "capacity"
    LABEL = "capacity"
    BACKLOG = Recorder.key("backlog")

    sidekiq_options retry: false, queue: QUEUE

    class << self
      attr_accessor :max
    end
    self.max = 2

    def self.add_work(*items)
      Sidekiq.redis { |conn| conn.call("RPUSH", BACKLOG, *items) }
    end

    def perform_work(seconds, gate = nil)
      item = Sidekiq.redis { |conn| conn.call("LPOP", BACKLOG) }
      return unless item # another job took the last one
      raise "boom" if item == "boom"

      Recorder.track(LABEL, item) { gate ? Recorder.wait_for_gate(gate, seconds) : sleep(seconds) }
    end

    def remaining_work_count(*) = Sidekiq.redis { |conn| conn.call("LLEN", BACKLOG) }

    def max_running_jobs = self.class.max
  end
end
