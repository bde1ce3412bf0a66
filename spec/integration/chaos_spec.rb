# frozen_string_literal: true

require_relative "../../chaos/lib/limit_fetch_chaos"

# bin/chaos in small (--quick): jobs pushed for 15 s to three `sidekiq`
# processes, a kill -9 and a replacement every ~2 s, a Redis restart halfway;
# its own Redis and app directory. The random choices follow RSpec's seed.
RSpec.describe "bin/chaos --quick", :e2e do
  it "loses no job, keeps every limit and leaves nothing behind while processes are killed and Redis restarts" do
    out = StringIO.new
    options = LimitFetchChaos::Options.parse(["--quick", "--no-results", "--seed", RSpec.configuration.seed.to_s])
    report = LimitFetchChaos::Runner.new(options, out: out).run
    facts = report.to_h
    story = "#{out.string}\n#{LimitFetchChaos::Markdown.render(facts)}"

    expect(report.failures).to eq([]), story
    expect(facts[:jobs]).to include(lost: 0, repeated_unexplained: [])
    expect(facts[:jobs][:completed]).to eq(facts[:jobs][:enqueued])
    expect(facts[:concurrency].values).to all(satisfy { |seen| seen[:max] <= (seen[:limit] || seen[:max]) })
    expect(facts[:concurrency]["b"][:max_per_process]).to be <= 1
    expect(facts[:chaos][:kills]).to be >= 2, story
    expect(facts[:chaos][:redis_restart]).not_to be_nil
    expect(facts[:redis_after_stop]).to include(busy: {}, in_progress: {}, capsule_keys: [], capsules: [])
  end
end
