# frozen_string_literal: true

require "open3"

# bin/demo's short run (--small): its driver, as bin/demo runs it once the
# extension is built, with two `sidekiq` processes on its own Redis: a hot
# tenant's backlog parked behind its key limit while other tenants' jobs
# run, a rated class, and queues with queue limits. Its exit status and
# summary say whether the limits held.
RSpec.describe "bin/demo --small", :e2e do
  it "runs every job once within its limits and says so" do
    out, status = Bundler.with_unbundled_env do
      Open3.capture2e("ruby", "demo/demo.rb", "--small", "--timeout", "60", chdir: File.expand_path("../..", __dir__))
    end

    expect(status.exitstatus).to eq(0), out
    summary = out[/^Summary: .*/m]
    expect(summary).to match(/^  acme: 60 jobs pushed first; at most 2 ran at once, up to [1-9]\d* waited parked/)
    expect(summary).to match(/^  10 other tenants: 20 jobs pushed behind acme's backlog; each started within /)
    expect(summary).to match(/ before acme's last; at most [12] of a tenant at once$/)
    rate = summary.match(/^  30 jobs: at most (\d+) starts in any 1 s window \((\d+) of 30 starts read as the gem/)
    expect(rate).not_to be_nil, summary
    expect(rate[1].to_i).to be_between(1, 20)
    # read every 0.2 s, each kept 1 s at least: a driver slowed down may miss some
    expect(rate[2].to_i).to be_positive
    expect(summary).to include("Sidekiq's retry, scheduled and dead sets stayed empty")
    expect(summary).to match(%r{^api .* / 3 .*OK})
    expect(summary).to match(/^All limits held and all 170 jobs ran, each once\.$/)
  end
end
