# frozen_string_literal: true

module LimitFetchDemo
  # Command-line options of bin/demo.
  Options = Data.define(:jobs, :small, :timeout, :screenshot) do
    def self.parse(argv)
      values = {jobs: nil, small: false, timeout: 120.0, screenshot: nil}
      LimitFetchTools::Options.parser(banner, switches, values).parse!(argv)
      LimitFetchTools::Options.at_least(values, %i[jobs])
      new(**values)
    end

    def self.banner
      "Usage: bin/demo [options]\n\nRuns jobs on two Sidekiq processes through sidekiq-limit_fetch-rs and checks " \
        "that the limits held.\n\n"
    end

    def self.switches
      [[:jobs, "--jobs N", Integer, "jobs of the queues with queue limits (default: " \
                                    "#{Plan::SIZES[false].queue_jobs}, --small #{Plan::SIZES[true].queue_jobs})"],
       [:small, "--small", "a short run: fewer jobs of every kind (a few seconds)"],
       [:timeout, "--timeout SECONDS", Float, "give up after that long (default: 120.0)"],
       [:screenshot, "--screenshot PATH", "saves a PNG of the Web UI's Limits tab while jobs wait parked " \
                                          "(headless Chromium)"]]
    end
  end
end
