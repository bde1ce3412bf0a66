# frozen_string_literal: true

require "time"

module Sidekiq
  class LimitFetch < BasicFetch
    # Why a queue's next job is or is not being fetched right now
    # (Queue#explain), from one read of the queue and of the registered
    # capsules. +reason+, the first that applies, in this order:
    #
    # :paused            paused (until +paused_until+, or until unpaused)
    # :at_fair_limit     a fair queue's running jobs fill its fair limit
    #                    (its jobs wait their tenant's turn, parked)
    # :empty             no job waits in it
    # :at_limit          its running jobs fill its global limit
    # :at_rate           its starts fill its rate's window (+next_start_in+:
    #                    seconds until the next may start)
    # :no_process        no live capsule (process) serves it
    # :at_process_limit  each live capsule serving it is at its process limit
    #                    (+processes+: their identities)
    # :eligible          the next fetch of a capsule serving it takes a job
    #
    # +limit+ is the one in force; an adaptive limit's is +adaptive+'s
    # {value:, floor:, ceiling:} (nil for a fixed one). A fair queue's
    # +fair_limit+ and its +tenants+ with work (nil for another queue).
    class Explanation
      REASONS = %i[eligible empty paused at_fair_limit at_limit at_rate at_process_limit no_process].freeze

      attr_reader :queue, :reason, :busy, :limit, :process_limit, :queued, :paused_until, :processes, :rate,
        :next_start_in, :adaptive, :fair_limit, :tenants

      # From a QueueState, RegisteredCapsules, for a queue with a rate its
      # RateWindow, and for a fair queue how many +tenants+ have work.
      def self.of(state, capsules, window = nil, tenants: nil)
        new(state, capsules, window, tenants: tenants)
      end

      # A time as the sentences (and the Web UI) show it: within a day, the
      # time of day (UTC); later, the date as well.
      def self.format_time(time)
        time = time.getutc
        time - Time.now < 86_400 ? time.strftime("%H:%M:%SZ") : time.iso8601
      end

      def initialize(state, capsules, window = nil, tenants: nil)
        @queue = state.name
        @tenants = tenants
        @rate = state.rate
        @next_start_in = window&.next_start_in
        read_limits(state)
        @paused_until = (Time.now + state.pause_left if state.pause_left)
        @processes = []
        @reason = reason_for(state, capsules.reject(&:expired?))
      end

      # A one-line sentence: "at its global limit 3/3", "paused until
      # 12:04:10Z", "at its rate 100/60 s, next start in 12.3 s", "at its
      # process limit 1 in host:1234:abc", "empty", "no live process serves
      # it", "eligible: 12 queued"; an adaptive limit's first: "adaptive 7
      # of 1..20: at its global limit 7/7"; a fair queue's too: "fair 10, 3
      # tenants with work: at its fair limit 10/10".
      def to_s
        text = reason_text
        text = "fair #{fair_limit}, #{tenants_text}: #{text}" if fair_limit
        return text unless adaptive

        "adaptive #{adaptive[:value]} of #{adaptive[:floor]}..#{adaptive[:ceiling]}: #{text}"
      end

      def to_h
        {
          reason: reason, message: to_s, busy: busy, limit: limit, process_limit: process_limit,
          queued: queued, paused_until: paused_until, processes: processes, rate: rate&.to_h,
          next_start_in: next_start_in, adaptive: adaptive, fair_limit: fair_limit, tenants: tenants
        }
      end

      def inspect
        "#<#{self.class.name} #{queue}: #{self}>"
      end

      private

      def reason_text
        case reason
        when :paused then paused_until ? "paused until #{format_time(paused_until)}" : "paused until unpaused"
        when :empty then "empty"
        when :no_process then "no live process serves it"
        when :eligible then "eligible: #{queued} queued, #{busy} running"
        else at_limit_text
        end
      end

      def read_limits(state)
        @busy = state.busy.values.sum
        @limit = state.limit
        @adaptive = state.adaptive
        @process_limit = state.process_limit
        @fair_limit = state.fair
        @queued = state.queued
      end

      def tenants_text = "#{tenants.to_i} #{tenants == 1 ? "tenant" : "tenants"} with work"

      def at_limit_text
        case reason
        when :at_limit then "at its global limit #{busy}/#{limit}"
        when :at_fair_limit then "at its fair limit #{busy}/#{fair_limit}"
        when :at_rate then "at its rate #{rate.inspect}, next start in #{format("%.1f", next_start_in)} s"
        else "at its process limit #{process_limit} in #{processes.join(", ")}"
        end
      end

      def reason_for(state, live)
        queue_reason(state) || process_reason(state, live)
      end

      def queue_reason(state)
        if state.paused then :paused
        elsif at_fair_limit? then :at_fair_limit
        elsif queued.zero? then :empty
        elsif limit && busy >= limit then :at_limit
        elsif next_start_in then :at_rate
        end
      end

      def at_fair_limit? = fair_limit && busy >= fair_limit

      def process_reason(state, live)
        serving = serving(live)
        return :no_process if serving.empty?
        return :eligible unless full?(state, serving)

        @processes = serving.map(&:label).uniq.sort
        :at_process_limit
      end

      # A capsule that did not say which queues it serves (v5) may serve it.
      def serving(live)
        live.select { |capsule| capsule.identity.nil? || capsule.queues.include?(queue) }
      end

      def full?(state, serving)
        process_limit && serving.all? { |capsule| state.busy.fetch(capsule.uuid, 0) >= process_limit }
      end

      def format_time(time) = Explanation.format_time(time)
    end
  end
end
