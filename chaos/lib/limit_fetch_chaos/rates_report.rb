# frozen_string_literal: true

module LimitFetchChaos
  # The part of the report on the rates (RatedLimit): each one's windows
  # from the jobs' own starts (RateWindows, the frozen process's woken
  # originals left out) and from what the gem counted (RecordedStarts), the waits of its parked jobs (Stalls.rate_lines,
  # every run counted: one begun is one its rate let go), and a sign that it
  # was at work: jobs seen parked behind it (else it never bound, and its
  # windows tested little).
  class RatesReport
    # `counted`: the runs the limits are held to; `runs`: all of them;
    # `stalls`: the Stalls of the rates' parked jobs; `recorded`: the
    # RecordedStarts; `restart`: the Mayhem::Restart, if any.
    def initialize(counted, runs, stalls, recorded, restart)
      unsampled = RecordedStarts.unsampled(restart)
      @windows = RatedLimit.all.map { RateWindows.of(_1, counted, recorded.times(_1.id), unsampled:) }
      @runs = runs
      @stalls = stalls
      @waits = stalls.longest(runs)
    end

    def problems
      [*@windows.flat_map(&:violations), *@stalls.problems(@runs),
       *@waits.filter_map { |line, wait| "#{line}: no job was ever seen parked" if wait[:waiting].zero? }]
    end

    # id => its windows, its longest wait with jobs parked and none of its
    # runs begun within a period, and in how many samples jobs were parked.
    def to_h
      @windows.to_h do |seen|
        wait = @waits.fetch("rate #{seen.id}")
        [seen.id, seen.to_h.merge(longest_wait_s: wait[:seconds], parked_samples: wait[:waiting],
          samples: wait[:samples], stall_after_s: Stalls::RATE_STALL)]
      end
    end
  end
end
