# frozen_string_literal: true

module LimitFetchBench
  # One configuration of the embedded Sidekiq under test: its fetch class, the
  # limit of its queue (nil: none), its concurrency and how long a job takes.
  # `baseline` names the BasicFetch variant its ratios compare with. `build`:
  # nil for the gem of this checkout, else the revision whose gem its runs
  # load (bin/bench --baseline; see Twin). The keyed section's variants
  # (KeyedVariants) also name their `workload` (nil: BenchJob; see
  # KeyedPusher), whether its jobs carry a key (`keyed`) and the `guard`, a
  # seed's server middleware limiting tenants without the gem (nil: none);
  # the rate section's (RateVariants), the `rate` its jobs run under
  # (:class, :queue, :key; nil: none).
  Variant = Data.define(:key, :label, :fetch, :limit, :concurrency, :job_seconds, :baseline, :build, :workload,
    :keyed, :guard, :rate)

  class Variant
    QUEUE = "default"

    def self.[](key)
      key, rev = Twin.split(key)
      sections = [ALL, KeyedVariants::ALL, RateVariants::ALL, BackOffVariants::ALL, FairVariants::ALL,
                  MemoryVariants::ALL]
      variant = sections.find { _1.key?(key) }&.fetch(key) or raise KeyError, "no variant #{key.inspect}"
      rev ? variant.twin(rev) : variant
    end

    OPTIONAL = {build: nil, workload: nil, keyed: false, guard: nil, rate: nil}.freeze

    def initialize(**fields) = super(**OPTIONAL, **fields)

    # The same variant with the gem of revision `rev`.
    def twin(rev) = with(key: Twin.key(key, rev), label: Twin.label(label, rev), build: rev)

    def limit_fetch? = fetch == :limit_fetch

    def slow? = job_seconds.positive?

    def keyed_section? = KeyedVariants::ALL.key?(Twin.split(key).first)

    ALL = [
      new("basic", "BasicFetch", :basic, nil, 10, 0, nil),
      new("gem", "LimitFetch, no limit", :limit_fetch, nil, 10, 0, "basic"),
      new("gem_limit10", "LimitFetch, limit 10 (not binding)", :limit_fetch, 10, 10, 0, "basic"),
      new("gem_limit5", "LimitFetch, limit 5 (binding)", :limit_fetch, 5, 10, 0, "basic"),
      new("basic_c5_10ms", "BasicFetch, concurrency 5, 10 ms jobs (reference)", :basic, nil, 5, 0.01, nil),
      new("gem_limit5_10ms", "LimitFetch, limit 5, 10 ms jobs", :limit_fetch, 5, 10, 0.01, "basic_c5_10ms")
    ].to_h { [_1.key, _1] }.freeze

    THROUGHPUT = ALL.keys.freeze
    IDLE = %w[basic gem].freeze
  end
end
