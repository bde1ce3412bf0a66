# frozen_string_literal: true

require "time"

module LimitFetchTools
  class Downstream
    # What the simulated downstream admits and what it has seen, behind one
    # mutex: each tenant may have `capacity` calls in flight; a call beyond
    # that is refused (#admit returns the Retry-After value to answer 429
    # with). Counts calls, 429s and connections, each tenant's most in flight
    # at once, every capacity change, and (#sample, every sample interval)
    # the calls in flight with the counters so far, so that a window of the
    # run can be read back: its calls, its 429s, how much capacity was used.
    # Times are seconds since the last #reset (the origin), also given as
    # wall-clock `started_at` for a caller that records its own times.
    class Ledger
      MODES = %w[seconds date].freeze

      Tenant = Struct.new(:calls, :ok, :too_many, :in_flight, :max_in_flight) do
        def to_h
          {"calls" => calls, "ok" => ok, "too_many" => too_many, "in_flight" => in_flight,
           "max_in_flight" => max_in_flight}
        end
      end

      def initialize(capacity:, retry_after:, mode:)
        @mutex = Mutex.new
        reset(capacity:, retry_after:, mode:)
      end

      # Forgets every count and sample and starts a new origin; calls still in
      # flight from before end uncounted (their generation is over).
      def reset(capacity: @capacity, retry_after: @retry_after, mode: @mode)
        settings = Ledger.check(capacity:, retry_after:, mode:)
        @mutex.synchronize do
          @capacity, @retry_after, @mode = settings
          @generation = (@generation || 0) + 1
          @origin = LimitFetchTools.monotonic
          @started_at = Time.now.to_f
          clear
        end
      end

      # [capacity, retry_after, mode] checked; ArgumentError naming a bad one.
      def self.check(capacity:, retry_after:, mode:)
        raise ArgumentError, "capacity: #{capacity.inspect} is not an integer >= 0" unless
          capacity.is_a?(Integer) && capacity >= 0
        raise ArgumentError, "retry_after: #{retry_after.inspect} is not a number of seconds >= 0" unless
          retry_after.is_a?(Numeric) && retry_after >= 0
        raise ArgumentError, "mode: #{mode.inspect} is not one of #{MODES.join(", ")}" unless MODES.include?(mode)

        [capacity, retry_after, mode]
      end

      def capacity=(capacity)
        Ledger.check(capacity:, retry_after: 0, mode: MODES.first)
        @mutex.synchronize do
          @capacity = capacity
          @changes << change
        end
      end

      def connected = @mutex.synchronize { @connections += 1 }

      # A ticket for #release if the call is admitted; else the Retry-After
      # value to refuse it with (String).
      def admit(name)
        @mutex.synchronize do
          @calls += 1
          tenant = @tenants[name]
          tenant.calls += 1
          next refuse(tenant) if tenant.in_flight >= @capacity

          tenant.in_flight += 1
          tenant.max_in_flight = [tenant.max_in_flight, tenant.in_flight].max
          @max_in_flight = [@max_in_flight, in_flight].max
          [@generation, name]
        end
      end

      # The admitted call is over (answered 200).
      def release((generation, name))
        @mutex.synchronize do
          next unless generation == @generation

          tenant = @tenants[name]
          tenant.in_flight -= 1
          tenant.ok += 1
        end
      end

      def sample
        @mutex.synchronize do
          tenants = @tenants.filter_map { |name, tenant| [name, tenant.in_flight] if tenant.in_flight.positive? }
          @samples << {"t" => now, "in_flight" => in_flight, "tenants" => tenants.to_h, "calls" => @calls,
                       "too_many" => @too_many, "capacity" => @capacity}
        end
      end

      def to_h
        @mutex.synchronize do
          {"started_at" => @started_at, "now" => now, "capacity" => @capacity, "retry_after" => @retry_after,
           "retry_after_mode" => @mode, "calls" => @calls, "ok" => @tenants.values.sum(&:ok),
           "too_many" => @too_many, "in_flight" => in_flight, "max_in_flight" => @max_in_flight,
           "connections" => @connections, "tenants" => @tenants.transform_values(&:to_h),
           "capacity_changes" => @changes.dup, "samples" => @samples.dup}
        end
      end

      private

      def clear
        @tenants = Hash.new { |hash, name| hash[name] = Tenant.new(0, 0, 0, 0, 0) }
        @calls = @too_many = @connections = @max_in_flight = 0
        @changes = [change]
        @samples = []
      end

      def now = (LimitFetchTools.monotonic - @origin).round(4)

      def in_flight = @tenants.each_value.sum(&:in_flight)

      def change = {"t" => now, "capacity" => @capacity}

      def refuse(tenant)
        @too_many += 1
        tenant.too_many += 1
        retry_after_value
      end

      # Delta-seconds as configured ("0.2", "30"), or an HTTP-date no earlier
      # than that many seconds from now (an HTTP-date has whole seconds).
      def retry_after_value
        return Time.at((Time.now.to_f + @retry_after).ceil).httpdate if @mode == "date"

        @retry_after == @retry_after.to_i ? @retry_after.to_i.to_s : @retry_after.to_s
      end
    end
  end
end
