# frozen_string_literal: true

module LimitFetchChaos
  # The checks of the rates (RatedLimit): each one's windows from the jobs'
  # own starts (RateWindows, the frozen process's woken originals left out)
  # and from what the gem counted (RecordedStarts), the waits of its parked
  # jobs (Stalls.rate_lines, every run counted: one begun is one its rate
  # let go), and the signs that it was at work: jobs seen parked behind it
  # (else it never bound, and its windows tested little), and for a rate
  # the gem may lease many starts at once (RatedLimit#leased?), a lease of
  # more than one start granted (RecordedStarts#leases; else the run held
  # the single starts alone to the rate).
  class RatesChecks
    # Each rate's RateWindows; "rate <id>" => the longest wait of its parked
    # jobs (Stalls#longest); id => its leases (RecordedStarts#leases).
    attr_reader :windows, :waits, :leases

    # `counted`: the runs the limits are held to; `runs`: all of them;
    # `stalls`: the Stalls of the rates' parked jobs; `recorded`: the
    # RecordedStarts.
    def initialize(counted, runs, stalls, recorded)
      @windows = RatedLimit.all.map { RateWindows.of(_1, counted, recorded.times(_1.id)) }
      @runs = runs
      @stalls = stalls
      @waits = stalls.longest(runs)
      @leases = RatedLimit.all.to_h { [_1.id, recorded.leases(_1.id)] }
    end

    def problems
      [*@windows.flat_map(&:violations), *@stalls.problems(@runs),
       *@waits.filter_map { |line, wait| "#{line}: no job was ever seen parked" if wait[:waiting].zero? },
       *unleased]
    end

    private

    def unleased
      RatedLimit.all.select(&:leased?).filter_map do |rated|
        "rate #{rated.id}: no lease of more than one start was granted" if @leases.fetch(rated.id)[:of_more].zero?
      end
    end
  end
end
