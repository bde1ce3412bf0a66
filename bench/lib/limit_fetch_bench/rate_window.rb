# frozen_string_literal: true

module LimitFetchBench
  # Starts against a rate's window, as the gem counts them: a start at t
  # counts until t + period (strictly), so two starts share a window when
  # they are less than a period apart.
  module RateWindow
    module_function

    # The most of `times` (seconds, any order) within any window of
    # `period` seconds; 0 for none.
    def most(times, period)
      sorted = times.sort
      first = 0
      sorted.each_index.map do |last|
        first += 1 while sorted[last] - sorted[first] >= period
        last - first + 1
      end.max || 0
    end

    # The earliest moment `count` starts, at most `limit` in any window of
    # `period`, can all have started, counted from the first: (⌈count /
    # limit⌉ − 1) periods.
    def ideal(count, limit, period) = (count.fdiv(limit).ceil - 1).clamp(0..) * period
  end
end
