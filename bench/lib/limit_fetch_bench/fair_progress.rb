# frozen_string_literal: true

module LimitFetchBench
  # The fair section's line per finished run, for the terminal: the
  # scenarios' figures (a, b's and c's shares, d's latest first start),
  # the most running and whether every job was done once; or a cost
  # variant's Redis CPU per job.
  module FairProgress
    module_function

    def line(run)
      label = run["label"] || Variant[run["variant"]].label
      head = format("%-10<s>s r%<r>d %-52<v>s", s: "fair", r: run["round"], v: label)
      return format("%<head>s %<us>.1f Redis CPU µs/job", head:, us: run["cost"]["redis_cpu_us_per_job"]) if
        run["cost"]

      "#{head} #{figures(run)}  #{tallied(run)}"
    end

    def figures(run)
      shares = %w[arrivals weighted].map { (run.dig(_1, "shares") || {}).values }
      hot = run["hot"] || {}
      "a #{fmt(run.dig("arrivals", "alone"))}  b #{fmt(*shares[0])}  c #{fmt(*shares[1])}  " \
        "d #{fmt(hot["first_start_max"])} s (#{hot["started"]} of #{hot["tenants"]} started)"
    end

    def fmt(*values) = values.map { _1 ? format("%.2f", _1) : "–" }.join("/")

    def tallied(run)
      tallies = FairScenarios::SCENARIOS.keys.filter_map { run.dig(_1, "tally") }
      once = tallies.all? { _1["done_once"] } ? "yes" : "NO"
      "most running #{tallies.map { _1["max_running"] }.max}  done once: #{once}"
    end
  end
end
