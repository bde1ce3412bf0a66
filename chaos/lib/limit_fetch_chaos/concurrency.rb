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

  # The most runs that carry one job limit (`id`, as the gem names it:
  # class:KeyedChaosJob, key:KeyedChaosJob#t1) in progress at one moment,
  # across all processes, counted as Concurrency counts a queue's, against
  # the limit; `busiest`: the process that ran the most of them at once.
  # `at_peak`: when over the limit, the runs in progress at the peak.
  JobLimitConcurrency = Data.define(:id, :max, :limit, :max_per_process, :busiest, :at_peak) do
    # One for KeyedChaosJob's class, then one per tenant, from the runs of queue k.
    def self.of_keyed(runs)
      runs = runs.select { _1.queue == KeyedChaosJob::QUEUE }
      [of("class:KeyedChaosJob", runs, KeyedChaosJob::CLASS_LIMIT),
       *KeyedChaosJob::TENANTS.map do |tenant|
         of("key:KeyedChaosJob##{tenant}", runs.select { _1.tenant == tenant }, KeyedChaosJob::TENANT_LIMIT)
       end]
    end

    def self.of(id, runs, limit)
      busiest, max_per_process = runs.group_by(&:worker).transform_values { Concurrency.peak(_1) }.max_by(&:last)
      max = Concurrency.peak(runs)
      new(id: id, max: max, limit: limit, max_per_process: max_per_process || 0, busiest: busiest,
        at_peak: max > limit ? at_peak(runs) : [])
    end

    # The runs in progress when the most were (the first such moment).
    def self.at_peak(runs)
      level = 0
      events = runs.flat_map { [[_1.start, 0], [_1.end_ns, 1]] }.sort
      moment = events.max_by { |_, kind| level += kind.zero? ? 1 : -1 }.first
      runs.select { moment.between?(_1.start, _1.end_ns) }.map { describe(_1) }
    end

    def self.describe(run) = "#{run.jid} in #{run.worker} from #{run.start} to #{run.finish || "its end, #{run.cut}"}"

    def violations
      max > limit ? ["job limit #{id}: #{max} jobs ran at once, limit #{limit} (#{at_peak.join("; ")})"] : []
    end
  end
end
