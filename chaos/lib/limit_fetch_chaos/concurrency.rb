# frozen_string_literal: true

module LimitFetchChaos
  # The most runs of a queue in progress at one moment, across all processes
  # and within each, from the runs' [start, end] intervals, against the
  # queue's limits.
  #
  # It cannot count too low: a run is recorded as started before its work
  # begins, a run without a recorded end lasts until its process was seen
  # dead, and two intervals that touch count as overlapping. Nor does a kill
  # make it count too high: every interval lies within the time the gem held
  # the run's slot (from the fetch until the acknowledgement, or until the
  # dead process's capsule was reaped, seconds after the kill).
  Concurrency = Data.define(:queue, :max, :limit, :max_per_process, :process_limit, :busiest) do
    def self.of(queue, runs, plan)
      per_process = runs.group_by(&:worker).transform_values { peak(_1) }
      busiest, max_per_process = per_process.max_by(&:last) || [nil, 0]
      new(queue: queue, max: peak(runs), limit: plan.limits[queue], max_per_process: max_per_process,
        process_limit: plan.process_limits[queue], busiest: busiest)
    end

    # The most intervals that overlap at one moment; at the same instant, a
    # start counts before an end.
    def self.peak(runs)
      level = 0
      runs.flat_map { [[_1.start, 0], [_1.end_ns, 1]] }.sort.map { |_, kind| level += kind.zero? ? 1 : -1 }.max || 0
    end

    # What went over a limit, as sentences.
    def violations
      [("queue #{queue}: #{max} jobs ran at once, limit #{limit}" if limit && max > limit),
       if process_limit && max_per_process > process_limit
         "queue #{queue}: #{max_per_process} jobs ran at once in #{busiest}, process limit #{process_limit}"
       end].compact
    end
  end
end
