# frozen_string_literal: true

module LimitFetchBench
  # A queue layout for the fetch cost: the capsule's queues, in strict order,
  # and the one that holds jobs, with how many.
  FetchScenario = Data.define(:key, :label, :queues, :filled, :depth) do
    def self.all(deep:, wide:)
      wide_names = ->(prefix) { Array.new(wide) { |index| format("%<prefix>s_%<index>03d", prefix:, index:) } }
      first = wide_names["fc_first"]
      last = wide_names["fc_last"]
      [new("shallow", "1 queue, 10 jobs queued", ["fc_shallow"], "fc_shallow", 10),
       new("deep", "1 queue, #{deep} jobs queued", ["fc_deep"], "fc_deep", deep),
       new("wide_first", "#{wide} queues, the first holds the job", first, first.first, 1),
       new("wide_last", "#{wide} queues, the last holds the job", last, last.last, 1)]
    end
  end

  # A fetcher setup for the fetch cost: BasicFetch, LimitFetch without
  # limits, or LimitFetch with a limit (never reached) on every queue.
  FetchVariant = Data.define(:key, :label, :fetch, :limited) do
    def self.all
      [new("basic", "BasicFetch", :basic, false),
       new("gem", "LimitFetch, no limit", :limit_fetch, false),
       new("gem_limits", "LimitFetch, a limit on every queue (not binding)", :limit_fetch, true)]
    end

    def limit_fetch? = fetch == :limit_fetch
  end
end
