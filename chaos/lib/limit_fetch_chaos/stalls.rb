# frozen_string_literal: true

module LimitFetchChaos
  # Stretches of time when jobs waited while none of theirs ran: a queue's
  # (queued, or parked at one of its job limits) with no run of the queue in
  # progress, a job limit's (parked) with no run that counts for it in
  # progress (a fair tenant's: none of its group's either). A slot leaked (booked for a job that no longer runs) does
  # that: the limit looks full, and what waits never runs. And a rate's
  # (RatedLimit: its parked jobs) with no run of it begun within its last
  # period: a rate lets some start every period, so parked jobs that wait
  # much longer were forgotten (not noted to go back as the window opens).
  # The driver samples what waits (#sample, whenever Redis answers); the
  # ledger says what ran. Any stretch longer than `limit` seconds is a
  # stall; samples more than GAP apart (Redis was down) end a stretch,
  # which starts again with the next sample.
  class Stalls
    GAP = 1_000_000_000
    # Seconds a rate's parked jobs may wait with none of its runs begun
    # within a period: 5 periods. Its window opens every period while jobs
    # wait, and some start within milliseconds (the first fetch after sends
    # them back, and a fetcher with nothing to do wakes for it); the kills
    # and the freeze leave other processes to fetch, and the outage is a
    # gap in the samples.
    RATE_STALL = 5 * RatedLimit.longest_period

    # What one line of samples counts: `keys`, the lists whose lengths are
    # its waiting jobs; `runs`, what selects its runs from the ledger;
    # `recent`, how long (ns) before a sample a run that was over by then
    # still counts as running (a rate's period; 0 for the others).
    Line = Data.define(:name, :keys, :runs, :recent) do
      def initialize(recent: 0, **)
        super
      end
    end

    # A queue and each of its job limits (WatchedLimit) that park.
    def self.lines(queues)
      queues.flat_map do |queue|
        limits = WatchedLimit.parking.select { _1.queues.include?(queue) }
        [Line.new(name: "queue #{queue}", keys: ["queue:#{queue}", *limits.map(&:parked_key)],
          runs: ->(runs) { runs.select { _1.queue == queue } }),
         *limits.map { Line.new(name: "job limit #{_1.id}", keys: [_1.parked_key], runs: _1.method(:awaited_runs)) }]
      end
    end

    # A line for each rate's parked jobs (RatedLimit).
    def self.rate_lines
      RatedLimit.all.map do |rated|
        Line.new(name: "rate #{rated.id}", keys: [rated.parked_key], runs: rated.method(:runs_of),
          recent: rated.period_ns)
      end
    end

    attr_reader :samples

    def initialize(lines, limit:)
      @lines = lines
      @limit = limit
      @keys = lines.flat_map(&:keys).uniq
      @samples = []
    end

    # Notes what waits now, through `conn`.
    def sample(conn)
      lengths = @keys.zip(conn.pipelined { |pipe| @keys.each { pipe.call("LLEN", _1) } }).to_h
      @samples << [LimitFetchChaos.now_ns, @lines.map { |line| line.keys.sum { lengths.fetch(_1) } }]
    end

    # {line:, from:, seconds:, waiting:} of each stretch longer than `limit`
    # (`from`: seconds after the first sample).
    def found(runs)
      @lines.each_with_index.flat_map do |line, i|
        stretches(line, line.runs.call(runs), i).select { _1[:seconds] > @limit }.map { _1.merge(line: line.name) }
      end
    end

    # Line name => {seconds:, waiting:} of its longest stretch (any length),
    # and how many samples found jobs waiting.
    def longest(runs)
      @lines.each_with_index.to_h do |line, i|
        longest = stretches(line, line.runs.call(runs), i).max_by { _1[:seconds] }
        [line.name, {seconds: longest&.fetch(:seconds)&.round(2) || 0, waiting: waiting_samples(i),
                     samples: @samples.size}]
      end
    end

    def problems(runs)
      found(runs).map do |stall|
        "#{stall[:line]}: jobs waited (up to #{stall[:waiting]}) while none of its jobs ran for " \
          "#{stall[:seconds].round(1)} s from #{stall[:from].round(1)} s (a stall: more than #{@limit} s)"
      end
    end

    private

    # The stalled stretches of `line`, the `index`-th, whose runs are `runs`.
    def stretches(line, runs, index)
      found = [nil]
      @samples.each_with_index do |(at, counts), n|
        found << nil if n.positive? && at - @samples[n - 1][0] > GAP
        stalled?(runs, line, at, counts[index]) ? extend(found, at, counts[index]) : found << nil
      end
      found.compact.map { timed(_1) }
    end

    # Jobs of `line` wait at `at`, and none of its runs was in progress then,
    # or within its `recent` before.
    def stalled?(runs, line, at, waiting) = waiting.positive? && runs.none? { _1.overlaps?(at - line.recent, at) }

    def waiting_samples(index) = @samples.count { |_, counts| counts[index].positive? }

    def timed(stretch)
      {from: (stretch[:from] - @samples.first[0]) / 1e9, seconds: (stretch[:to] - stretch[:from]) / 1e9,
       waiting: stretch[:waiting]}
    end

    # Adds a stalled sample to the last stretch, or starts one (after a nil,
    # which ends one).
    def extend(found, at, waiting)
      found << {from: at, to: at, waiting: 0} unless found.last
      found.last[:to] = at
      found.last[:waiting] = [found.last[:waiting], waiting].max
    end
  end
end
