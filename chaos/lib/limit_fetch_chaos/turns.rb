# frozen_string_literal: true

module LimitFetchChaos
  # The queues whose parked jobs make the gem's hand-overs go to the script
  # take turns with LeasedChaosJob's, on the run's clock (Plan#feeds?): no
  # job is handed over (so no leased start is spent) while jobs parked
  # behind any rate or back-off are due within a second (RATE_DUE_SOON in
  # src/capsule/hand_over/verdict.rs), and r's (the rates') and o's (the
  # back-offs') have some all the time they are fed. So r and o are fed
  # RATED seconds, BACKLOG deep (enough that their rates and limits bind,
  # few enough to go within a second or so), then none of the three for
  # DRAIN seconds (their parked jobs go: with more of them, some were still
  # due as l's turn began), then l for LEASED seconds: each of its floods
  # begins in an empty window with nothing parked anywhere, where leases
  # grow to many starts, and goes on near its limit (leases of one start,
  # the script's, jobs parked behind its rate); its pause, longer than its
  # period, empties its window again.
  module Turns
    QUEUES = [*RatedChaosJob::QUEUES, *BackingOffChaosJob::QUEUES].freeze
    BACKLOG = 20
    RATED = 1.0
    DRAIN = 2.5
    LEASED = 1.5
    SECONDS = [RATED, DRAIN, LEASED].freeze

    module_function

    # Whether `queue` is fed at `elapsed` (seconds of the run's clock).
    def feeds?(queue, elapsed)
      at = elapsed % SECONDS.sum
      return at >= RATED + DRAIN if LeasedChaosJob::QUEUES.include?(queue)

      !QUEUES.include?(queue) || at < RATED
    end

    # Jobs kept waiting in `queue` (Plan#backlog) while it is fed.
    def backlog(queue) = QUEUES.include?(queue) ? BACKLOG : Feeder::BACKLOG

    def describe
      "a leased rate on #{LeasedChaosJob::QUEUES.join(", ")} (a capsule of 3 threads each): LeasedChaosJob " \
        "#{LeasedChaosJob::LIMIT} starts per #{LeasedChaosJob::PERIOD} s of the class, jobs of " \
        "#{LeasedChaosJob::MILLIS.min}-#{LeasedChaosJob::MILLIS.max} ms; #{QUEUES.join(" and ")} fed #{RATED} s " \
        "(#{BACKLOG} deep), then none of them for #{DRAIN} s, then #{LeasedChaosJob::QUEUES.join} for #{LEASED} s, " \
        "in turn"
    end
  end
end
