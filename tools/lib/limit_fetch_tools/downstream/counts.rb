# frozen_string_literal: true

module LimitFetchTools
  class Downstream
    # What the downstream saw since its last reset (its GET /stats, parsed),
    # with the reading of a stretch of the run: `window(from, to)` (seconds
    # since the origin) gives its calls, 429s and their share (from the
    # counters sampled at its ends) and the calls in flight, mean and most,
    # over its samples (of one tenant, or of all); #after_changes gives that
    # for the stretch after each capacity change, with the share of the
    # capacity used (mean in flight / capacity).
    class Counts
      attr_reader :to_h

      def initialize(hash)
        @to_h = hash
      end

      def [](key) = to_h.fetch(key)

      def samples = self["samples"]

      def changes = self["capacity_changes"]

      def tenant(name) = self["tenants"].fetch(name, {})

      def too_many_share = self["calls"].zero? ? 0.0 : self["too_many"].fdiv(self["calls"])

      def window(from, to, tenant: nil)
        calls, too_many = %w[calls too_many].map { counted(_1, from, to) }
        flights = in_flight(from, to, tenant)
        {"from" => from, "to" => to, "samples" => flights.size, "calls" => calls, "too_many" => too_many,
         "too_many_share" => calls.zero? ? 0.0 : too_many.fdiv(calls),
         "mean_in_flight" => flights.empty? ? 0.0 : flights.sum.fdiv(flights.size), "max_in_flight" => flights.max}
      end

      # For each capacity change after the first (the setting at the
      # origin): the window of `seconds` that starts `settle` seconds after
      # it, its capacity, and the share of that capacity used.
      def after_changes(seconds: 5, settle: 0, tenant: nil)
        changes.drop(1).map do |change|
          from = change["t"] + settle
          stretch = window(from, from + seconds, tenant:)
          used = change["capacity"].zero? ? nil : stretch["mean_in_flight"].fdiv(change["capacity"])
          stretch.merge("capacity" => change["capacity"], "capacity_used" => used)
        end
      end

      private

      # The calls in flight (of `tenant`, or of all) in each sample of [from, to).
      def in_flight(from, to, tenant)
        inside = samples.select { |sample| sample["t"] >= from && sample["t"] < to }
        inside.map { |sample| tenant ? sample["tenants"].fetch(tenant, 0) : sample["in_flight"] }
      end

      # The counter's growth between the last samples at or before each end
      # (0 before the first sample).
      def counted(name, from, to) = at(name, to) - at(name, from)

      def at(name, time)
        last = samples.take_while { _1["t"] <= time }.last
        last ? last[name] : 0
      end
    end
  end
end
