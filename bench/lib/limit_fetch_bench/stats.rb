# frozen_string_literal: true

module LimitFetchBench
  # Order statistics over a list of numbers, and over one figure of a
  # variant's runs (the runs without it left out).
  module Stats
    module_function

    # Nearest-rank percentile; nil for no values.
    def percentile(values, pct)
      return nil if values.empty?

      sorted = values.sort
      sorted[((pct / 100.0 * sorted.size).ceil - 1).clamp(0, sorted.size - 1)]
    end

    # {"p50" => ..., "max" => ...}: each named percentile ("min" and "max": the ends) of the values.
    def percentiles(values, *names)
      names.to_h { [_1, _1.start_with?("p") ? percentile(values, _1[1..].to_i) : values.public_send(_1)] }
    end

    def median(values) = percentile(values, 50)
    def mean(values) = values.empty? ? nil : values.sum.fdiv(values.size)
    def spread(values) = values.empty? ? nil : {"median" => median(values), "min" => values.min, "max" => values.max}
    def ratio(value, base) = value && base&.nonzero? && value.fdiv(base)
    # The figure `key` of the runs (an array: a path).
    def of(runs, key) = runs.filter_map { _1.dig(*key) }
    # The median of the runs' figure over that of the other runs' (nil without them).
    def versus(runs, other, key) = other && ratio(median(of(runs, key)), median(of(other, key)))
  end
end
