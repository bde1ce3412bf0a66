# frozen_string_literal: true

module LimitFetchChaos
  # A job limit's value over time (wall-clock ns): `initial` (the default its
  # jobs carry) until the first of `steps`, each [at, value] in time order.
  # The Tuner places a step where it is conservative to: a raise when its
  # call began, a lowering when its call returned.
  LimitSchedule = Data.define(:initial, :steps) do
    def self.constant(limit) = new(initial: limit, steps: [])

    def value_at(time) = steps.reverse_each.find { |at, _| at <= time }&.last || initial

    # The highest value in force at any moment of [from, to].
    def max_over(from, to) = [value_at(from), *steps.filter_map { |at, value| value if at > from && at <= to }].max

    def highest = [initial, *steps.map(&:last)].max

    # [from, to, value] of each stretch with one value (from -Infinity, to
    # Infinity); a stretch after a lowering from +lag+ after it.
    def stretches(lag: 0)
      values = [initial, *steps.map(&:last)]
      bounds = [-Float::INFINITY, *steps.map(&:first), Float::INFINITY]
      values.each_with_index.map do |value, i|
        [bounds[i] + (i.positive? && value < values[i - 1] ? lag : 0), bounds[i + 1], value]
      end
    end

    def to_s = [initial, *steps.map(&:last)].join(" -> ")
  end
end
