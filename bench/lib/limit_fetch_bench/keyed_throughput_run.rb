# frozen_string_literal: true

module LimitFetchBench
  # A throughput run of the keyed section's "distinct" workload: the same
  # no-op jobs with a distinct key each, or with none (KeyedPusher#distinct).
  class KeyedThroughputRun < ThroughputRun
    private

    def push = KeyedPusher.new(@spec["redis_url"]).tap { _1.distinct(@jobs, @variant.keyed) }.close
  end
end
