# frozen_string_literal: true

module LimitFetchBench
  # How a variant is named when its runs load the gem built from another
  # revision (bin/bench --baseline REV): key "gem@abc1234", label
  # "LimitFetch, no limit @abc1234". Its twin is the same variant of this
  # checkout, against which its ratios are reported.
  module Twin
    module_function

    def key(key, rev) = "#{key}@#{rev}"

    def label(label, rev) = "#{label} @#{rev}"

    # [the variant's key in this checkout, the revision or nil]
    def split(key) = key.split("@", 2)
  end
end
