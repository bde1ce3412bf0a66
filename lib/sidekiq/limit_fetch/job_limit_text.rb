# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # What JobLimit#explain says of a job limit, in one line: "backing off,
    # 12.3 s left (BackOff from ApiJob, jid 5f0c...)", "at its limit 3/3, 12
    # parked", "2 of 3 running", "adaptive 7 of 1..20: at its limit 7/7, 40
    # parked", "tenant acme: 3 of its fair 3.3 of 10, 4 tenants with work".
    class JobLimitText
      # +state+: its JobLimitState; +default+: its default (JobLimit's);
      # +fair+: a tenant's FairState, or nil.
      def initialize(state, default, fair = nil)
        @state = state
        @default = default
        @fair = fair
      end

      def to_s
        return JobLimit.back_off_text(@state.back_off) if @state.back_off
        return fair_text if @fair

        limit = JobLimit.in_force(@state, @default)
        return "#{@state.running} running, #{@state.parked} parked" if limit.nil?

        parked(limit_text(limit))
      end

      private

      def limit_text(limit)
        full = @state.running >= limit
        text = full ? "at its limit #{@state.running}/#{limit}" : "#{@state.running} of #{limit} running"
        JobLimit.adaptive_h(@state, @default) ? "adaptive #{limit} of #{@default}: #{text}" : text
      end

      def parked(text) = @state.parked.positive? ? "#{text}, #{@state.parked} parked" : text

      # A tenant's share, and its own limit if one is stored.
      def fair_text
        @state.stored ? "#{@fair}; its own limit #{@state.stored}" : @fair.to_s
      end
    end
  end
end
