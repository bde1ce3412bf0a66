# frozen_string_literal: true

module LimitFetchChaos
  # The starts the gem counted for each rate (RatedLimit), as it keeps them:
  # its job limit's starts set (Keys.job_starts), a sorted set of its
  # window's starts, each member "<capsule>:<microseconds of Redis's clock>"
  # (so each start is told from the others). The driver reads every set at
  # each tick (#sample); their union is what the gem counted, on Redis's
  # clock: the fetches themselves, with no lag to allow for. It cannot count
  # too high (a member is a start the gem counted), and too low only by
  # starts that came and left between two reads more than a period apart:
  # the driver reads every 0.1 s, but the starts counted between its last
  # read and Redis's outage have expired when Redis is back (#unsampled).
  # What the gem counted then holds to the rate exactly, while the jobs'
  # own starts (RateWindows) hold to it only with RATE_SLACK.
  class RecordedStarts
    # When starts may have been counted that no read saw (ns), with a
    # Mayhem::Restart (nil: none): from a period before Redis went down
    # (the last read before came later) until it was back.
    def self.unsampled(restart)
      restart && ((restart.down_from - (RatedLimit.longest_period * 1_000_000_000))..restart.down_until)
    end

    def initialize(rated = RatedLimit.all)
      @ids = rated.map(&:id)
      @keys = @ids.map { KEYS.job_starts(_1) }
      @seen = @ids.to_h { [_1, Set.new] }
    end

    def sample(conn)
      replies = conn.pipelined { |pipe| @keys.each { pipe.call("ZRANGE", _1, 0, -1) } }
      @ids.zip(replies) { |id, members| @seen.fetch(id).merge(members) }
    end

    # The sorted times (wall-clock ns) of the starts counted for rate `id`.
    def times(id) = @seen.fetch(id).map { Integer(_1.split(":").last) * 1000 }.sort
  end
end
