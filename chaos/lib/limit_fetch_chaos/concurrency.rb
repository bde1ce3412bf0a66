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

  # The runs that carry one job limit (`id`, as the gem names it:
  # class:KeyedChaosJob, key:KeyedChaosJob#t1), counted as Concurrency counts
  # a queue's, against its LimitSchedule. `max`: the most in progress at one
  # moment, across all processes; `busiest`: the process that ran the most of
  # them at once; `over`: the worst moment more ran than allowed, if any
  # (`at_peak`: the runs in progress then); `phases`: for a limit changed at
  # run time, the most seen in each stretch of one limit (after FETCH_LAG
  # past a lowering).
  #
  # Why the allowed count at a moment is the highest limit in force within
  # FETCH_LAG before the last start. A change cannot preempt running jobs: a
  # lowering holds for the fetches that follow it, and jobs fetched before
  # it run on. Let J be the runs in progress at a moment t and j the one
  # fetched last, at f. Every other run of J was fetched before f and still
  # held its slot at f (a run lies within its slot's time, from the fetch to
  # the acknowledgement or the reaping), so the fetch of j saw at least
  # |J| - 1 slots busy and took j only under the limit in force at f:
  # |J| <= limit(f). And f <= t, while f is no earlier than the fetch of the
  # run of J that started last, which precedes its recorded start by at most
  # FETCH_LAG (the time from Sidekiq's fetch into the job's first line, where
  # it reads the clock; no Redis call in between). The count only rises at
  # starts, so checking each start s against the highest limit in force over
  # [s - FETCH_LAG, s] checks every moment. For a constant limit, that is the
  # limit itself.
  FETCH_LAG = 1_000_000_000

  JobLimitConcurrency = Data.define(:id, :max, :limit, :max_per_process, :busiest, :over, :at_peak, :phases) do
    def self.of(id, runs, schedule)
      busiest, max_per_process = runs.group_by(&:worker).transform_values { Concurrency.peak(_1) }.max_by(&:last)
      starts = levels(runs)
      over = worst(starts, schedule)
      new(id: id, max: Concurrency.peak(runs), limit: schedule.highest, max_per_process: max_per_process || 0,
        busiest: busiest, over: over, at_peak: over ? in_progress(runs, over[:at]) : [],
        phases: phases(starts, schedule))
    end

    # [at, level] at each start: the runs in progress then, itself included
    # (at the same instant, a start counts before an end).
    def self.levels(runs)
      level = 0
      runs.flat_map { [[_1.start, 0], [_1.end_ns, 1]] }.sort.filter_map do |at, kind|
        level += kind.zero? ? 1 : -1
        [at, level] if kind.zero?
      end
    end

    # {at:, seen:, limit:} at the start with the most runs over the limit
    # allowed then; nil if none was over.
    def self.worst(starts, schedule)
      starts.map { |at, level| {at: at, seen: level, limit: schedule.max_over(at - FETCH_LAG, at)} }
            .select { _1[:seen] > _1[:limit] }.max_by { _1[:seen] - _1[:limit] }
    end

    # The most seen at once in each stretch of one limit, if it changed.
    def self.phases(starts, schedule)
      return [] if schedule.steps.empty?

      schedule.stretches(lag: FETCH_LAG).map do |from, to, limit|
        seen = starts.filter_map { |at, level| level if at >= from && at < to }
        {limit: limit, most: seen.max || 0, starts: seen.size}
      end
    end

    # The runs in progress at +moment+, described.
    def self.in_progress(runs, moment) = runs.select { moment.between?(_1.start, _1.end_ns) }.map { describe(_1) }

    def self.describe(run) = "#{run.jid} in #{run.worker} from #{run.start} to #{run.finish || "its end, #{run.cut}"}"

    def violations
      over ? ["job limit #{id}: #{over[:seen]} jobs ran at once, limit #{over[:limit]} (#{at_peak.join("; ")})"] : []
    end
  end
end
