# frozen_string_literal: true

module LimitFetchChaos
  # The starts of one rate's runs (`rated`, a RatedLimit), from the jobs'
  # own records, held to the rate: no window of its period may hold more
  # than its limit of starts. Every run counts, a job's runs after a kill
  # too (each was a fetch of its own, and the gem counts each), but the
  # frozen process's woken originals (Frozen#original?: fetched before the
  # freeze, their start read after it). `starts`: how many; `most`: the
  # most within any window of the period (the tightest window); `span`: the
  # shortest time (ns) from the first to the last of limit + 1 starts in a
  # row (nil for fewer starts); `over`: the runs of limit + 1 starts that
  # lie within less than the period less RATE_SLACK, each a violation. And
  # beside them, what the gem counted (`recorded`, RecordedStarts), held
  # to the rate exactly: no lag on Redis's clock; and each run held to a
  # start of its own there, within FETCH_LAG before it (or LEASE_AHEAD
  # after, a leased start's stamp): a run with none is a start the gem did
  # not count (or gave back as unspent), which its windows cannot show.
  #
  # Why RATE_SLACK. The gem counts a start where it takes the job (the
  # fetch, on Redis's clock); the ledger has the job's own start, read in
  # its first line, later by a lag: Redis's reply (sent once the AOF is
  # fsynced: appendfsync always), the thread's wake-up, Sidekiq's dispatch,
  # with no Redis call in between (as for FETCH_LAG). If every lag is at
  # most RATE_SLACK, limit + 1 starts within less than the period less
  # RATE_SLACK were fetched within less than the period (the last no later
  # than its start, the first no earlier than RATE_SLACK before its own):
  # one start too many, a real violation. So it cannot count too high while
  # the lags stay under RATE_SLACK, and it counts too low only a start too
  # many that came within RATE_SLACK of the window's end. The gem's windows,
  # seen from the jobs, show as limit + 1 starts about a period apart
  # (`most` at times limit + 1 or 2, the lags' jitter across the bursts a
  # window lets go); a start too many that a bug lets in (a window not
  # shared across processes, a released job overtaken, a start not counted
  # across the outage) comes anywhere in the window, and shows as limit + 1
  # starts well within 750 ms. 250 ms for a period of 1 s: the lag is a few
  # ms, but under load it reaches 100 ms and more (a run beside another
  # session's benchmark had two jobs, in two processes, fetched together
  # and begun 119 ms later, by the gem's own record in Redis's AOF: a reply
  # held by a slow fsync); the freeze's, 20 s, goes with its woken
  # originals. Where the lags measured (`lag`) are longer, up to half the
  # period, the check allows them (a run with two CPU-bound sessions beside
  # it: 315 ms, the gem's own count exact).
  RATE_SLACK = 250_000_000

  # How long after a job's fetch the gem may stamp its start: a leased
  # start (src/capsule/hand_over/lease.rs) is stamped at its lease's end, a
  # span after the grant, 50 ms at most (LEASE_SPAN_MAX in
  # src/lua/prelude/rates.lua). A run pairs with a counted start up to that
  # much after its own start, and a lag measured so allows that much more.
  LEASE_AHEAD = 50_000_000

  RateWindows = Data.define(:rated, :runs, :spans, :recorded) do
    # `runs`: the runs that count (woken originals left out); `recorded`:
    # the times of the starts the gem counted (RecordedStarts#times).
    def self.of(rated, runs, recorded = [])
      runs = rated.runs_of(runs).sort_by(&:start)
      new(rated: rated, runs: runs, spans: runs.each_cons(rated.limit + 1).map { _1.last.start - _1.first.start },
        recorded: recorded)
    end

    # The most of the sorted times `at` within any window of `period` ns
    # (a start exactly `period` after another is in the next window, as the
    # gem counts it).
    def self.most(at, period)
      last = 0
      counts = at.each_with_index.map do |from, first|
        last += 1 while last < at.size && at[last] < from + period
        last - first
      end
      counts.max || 0
    end

    def id = rated.id

    def starts = runs.size

    def most = self.class.most(runs.map(&:start), rated.period_ns)

    def span = spans.min

    # The first of each limit + 1 starts in a row within less than the
    # period less the slack (worked out once: each lag is a search over the
    # runs).
    def over
      checked = rated.period_ns - slack
      spans.each_index.select { spans[_1] < checked }
    end

    # RATE_SLACK, or the lags measured and LEASE_AHEAD where longer, up to
    # half the period.
    def slack = (lag&.+(LEASE_AHEAD) || 0).clamp(RATE_SLACK, [RATE_SLACK, rated.period_ns / 2].max)

    # The runs of the tightest of those.
    def tightest = over.min_by { spans[_1] }&.then { runs[_1, rated.limit + 1] } || []

    # Milliseconds a window is checked over: the period less the slack.
    def checked_ms = (rated.period_ns - slack) / 1e6

    # The most starts the gem counted within any window of the period.
    def recorded_most = self.class.most(recorded, rated.period_ns)

    # The smallest bound on the lags from fetch to start that pairs each run
    # with a start of its own the gem counted, at or before it, or up to
    # LEASE_AHEAD after (a leased start's stamp) (ns, to the
    # ms; nil if none up to FETCH_LAG does, or nothing was recorded): the
    # largest lag, or less (a pairing's, not the jobs' own), to hold
    # RATE_SLACK against, LEASE_AHEAD added.
    def lag
      at = runs.map(&:start)
      return unless recorded.any? && paired?(at, FETCH_LAG)

      low = -1
      high = FETCH_LAG
      while high - low > 1_000_000
        middle = (low + high) / 2
        paired?(at, middle) ? high = middle : low = middle
      end
      high
    end

    # How many runs pair with no start the gem counted (#lag's pairing, up
    # to FETCH_LAG): 0 where nothing was recorded (a test's windows alone).
    def uncounted = recorded.empty? ? 0 : unpaired(runs.map(&:start), FETCH_LAG)

    def violations = [*crowded, *miscounted, *uncounted_violation]

    def to_h
      {limit: rated.limit, period_s: rated.period, starts: starts, most_in_period: most,
       shortest_span_ms: span && ms(span), checked_ms: checked_ms, windows_over: over.size,
       recorded: recorded_h}
    end

    private

    def recorded_h
      {starts: recorded.size, most_in_period: recorded_most, lag_ms: lag&.then { ms(_1) }, uncounted: uncounted}
    end

    def paired?(at, bound) = unpaired(at, bound).zero?

    # How many of the sorted times `at` pair with no start recorded no more
    # than LEASE_AHEAD later and no more than `bound` earlier, each used
    # once (the earliest that fits: no later time could use an earlier
    # one).
    def unpaired(at, bound)
      next_one = 0
      at.count do |start|
        next_one += 1 while next_one < recorded.size && recorded[next_one] < start - bound
        next true if next_one == recorded.size || recorded[next_one] > start + LEASE_AHEAD

        next_one += 1
        false
      end
    end

    def crowded
      runs = tightest
      return [] if runs.empty?

      ["rate #{id}: #{runs.size} jobs started within #{ms(runs.last.start - runs.first.start)} ms, " \
       "#{allowed} (#{over.size} such windows) (#{described(runs)})"]
    end

    def miscounted
      return [] if recorded_most <= rated.limit

      ["rate #{id}: the gem counted #{recorded_most} starts within #{rated.period} s (its starts set, on Redis's " \
       "clock), limit #{rated.limit}"]
    end

    def uncounted_violation
      return [] if uncounted.zero?

      ["rate #{id}: #{uncounted} jobs started with no start of theirs in the gem's count (within " \
       "#{ms(FETCH_LAG).round} ms before each or #{ms(LEASE_AHEAD).round} ms after): starts it did not count"]
    end

    def allowed
      "limit #{rated.limit} in any #{rated.period} s (checked over #{checked_ms.round} ms, the rest the lag from " \
        "fetch to start)"
    end

    def ms(nanos) = (nanos / 1e6).round(1)

    def described(crowded) = crowded.map { "#{_1.jid} in #{_1.worker} at #{_1.start}" }.join("; ")
  end
end
