# frozen_string_literal: true

require "json"

module Sidekiq
  class LimitFetch < BasicFetch
    # The limits job limits' jobs carry (JobLimits#payload), which the fetch
    # applies where none is stored: the concurrency and the rate. Read from
    # the jobs themselves, in up to three round trips: the oldest parked job
    # of each limit (the one the next release reads), else a job running
    # with it, in the in-progress lists of a capsule holding one of its
    # slots. The keys are the core's (Keys): parked(id), job_busy(id),
    # capsule_queues(uuid) and in_progress(uuid, queue).
    class CarriedLimits
      # What one job limit's jobs carry: its +concurrency+ (nil for none, or
      # an invalid one; an adaptive limit's floor), an adaptive limit's
      # +ceiling+ (nil for a fixed one) and its +rate+ (a Rate, or nil).
      Carried = Data.define(:concurrency, :ceiling, :rate) do
        # The default as a declaration gives it: an Integer, an adaptive
        # limit's Range, or nil.
        def default = ceiling ? concurrency..ceiling : concurrency
      end

      # {id => Carried} for the +ids+ whose jobs tell their limits.
      def self.read(ids, config = Sidekiq.default_configuration)
        ids.empty? ? {} : config.redis { |conn| new(conn).read(ids) }
      end

      def initialize(conn)
        @conn = conn
      end

      def read(ids)
        oldest_parked, holders = heads(ids)
        found = ids.zip(oldest_parked).to_h { |id, job| [id, carried(limits_of(job), id)] }.compact
        running(ids.zip(holders).reject { |id, uuid| found.key?(id) || uuid.nil? }).merge(found)
      end

      private

      # The oldest parked job of each limit, and a capsule holding one of
      # its slots: [[job or nil, ...], [uuid or nil, ...]].
      def heads(ids)
        replies = @conn.pipelined do |pipe|
          ids.each do |id|
            pipe.call("LINDEX", Keys.parked(id), -1)
            pipe.call("LINDEX", Keys.job_busy(id), 0)
          end
        end
        replies.each_slice(2).to_a.transpose
      end

      # From the jobs running in the capsules holding a slot of each:
      # [[id, uuid], ...].
      def running(holders)
        return {} if holders.empty?

        jobs = running_limits(holders.map(&:last).uniq)
        holders.to_h { |id, uuid| [id, jobs[uuid].lazy.filter_map { carried(_1, id) }.first] }.compact
      end

      # {uuid => the limits each of its running jobs carries}.
      def running_limits(uuids)
        lists = in_progress_lists(uuids)
        jobs = @conn.pipelined do |pipe|
          lists.each { |uuid, queue| pipe.call("LRANGE", Keys.in_progress(uuid, queue), 0, -1) }
        end
        by_uuid = uuids.to_h { [_1, []] }
        lists.zip(jobs).each { |(uuid, _), list| by_uuid[uuid].concat(list.map { limits_of(_1) }) }
        by_uuid
      end

      # [[uuid, queue], ...]: the in-progress lists of the capsules.
      def in_progress_lists(uuids)
        queues = @conn.pipelined { |pipe| uuids.each { pipe.call("SMEMBERS", Keys.capsule_queues(_1)) } }
        uuids.zip(queues).flat_map { |uuid, names| names.map { [uuid, _1] } }
      end

      # The limits a job's payload carries, [] for none (or no job).
      def limits_of(job)
        payload = job && JSON.parse(job)
        limits = payload["limit_fetch"] if payload.is_a?(Hash)
        limits.is_a?(Array) ? limits : []
      rescue JSON::ParserError
        []
      end

      # The limits of +id+ among +limits+, if an entry is carried.
      def carried(limits, id)
        entry = limits.find { |limit| limit.is_a?(Hash) && limit["id"] == id }
        return unless entry

        value = entry["concurrency"]
        concurrency = value if value.is_a?(Integer) && value.between?(0, Limits::MAX)
        Carried.new(concurrency: concurrency, ceiling: ceiling(entry["ceiling"], concurrency),
          rate: rate(entry["rate"]))
      end

      # An adaptive limit's carried ceiling, above its +floor+; nil if none
      # or invalid.
      def ceiling(value, floor)
        value if floor && value.is_a?(Integer) && value.between?(floor, Limits::MAX)
      end

      # A carried rate, [limit, period], as a Rate; nil if none or invalid.
      def rate(value)
        Rates.rate(*value) if value.is_a?(Array) && value.size == 2
      end
    end
  end
end
