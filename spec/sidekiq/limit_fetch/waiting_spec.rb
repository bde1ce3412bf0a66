# frozen_string_literal: true

# An idle fetcher blocks, as Sidekiq's own BRPOP does, and wakes when a job
# is pushed, a slot is freed or a limit is raised. Each example makes the
# fetch timeout and the poll interval far longer than the time it allows, so
# only the doorbell (Redis client-side caching) can explain a prompt wake-up.
RSpec.describe Sidekiq::LimitFetch, "waiting for work" do
  # Seconds: :fetch_timeout and :poll_range.
  def long = 20

  # Seconds: generous, yet well below #long.
  def prompt = 5

  before do
    described_class.configuration[:fetch_timeout] = long
    described_class.configuration[:poll_range] = long..long
  end

  # Runs retrieve_work on a thread; returns [thread, start time] once the
  # fetcher has had time to find nothing and block.
  def waiting_fetch(fetcher)
    started = monotonic_now
    thread = Thread.new { fetcher.retrieve_work }
    sleep 0.3
    expect(thread).to be_alive # still waiting: nothing was eligible
    [thread, started]
  end

  def expect_prompt_unit(thread, started, queue:)
    expect(thread.join(prompt)).to be(thread), "the waiting fetch did not wake"
    unit = thread.value
    expect(unit&.queue_name).to eq(queue)
    expect(monotonic_now - started).to be < prompt
    unit
  end

  it "takes a job pushed while it waits" do
    fetcher = fetcher_for(build_capsule(queues: %w[a b]))
    thread, started = waiting_fetch(fetcher)

    push_jobs("b", 1)

    expect_prompt_unit(thread, started, queue: "b")
  end

  it "takes a slot that another process frees" do
    push_jobs("a", 2)
    holder = build_capsule(queues: %w[a], limits: {a: 1})
    held = fetcher_for(holder).retrieve_work
    capsule = build_capsule(queues: %w[a])
    thread, started = waiting_fetch(fetcher_for(capsule))

    held.acknowledge

    expect_prompt_unit(thread, started, queue: "a")
    expect(busy_entries("a")).to eq([uuid_of(capsule)])
  end

  it "takes a job when a limit is raised at run time" do
    capsule = build_capsule(queues: %w[a], limits: {a: 0})
    thread, started = waiting_fetch(fetcher_for(capsule))
    push_jobs("a", 1)
    sleep 0.2
    expect(thread).to be_alive # the limit of 0 still holds

    described_class::Global::QueueSemaphore.new(capsule, "a").limit = 1

    expect_prompt_unit(thread, started, queue: "a")
  end

  it "lets idle processors stop at once when Sidekiq quiets" do
    config = build_config(queues: %w[a], concurrency: 4)
    instance = start_embedded(config)
    sleep 0.5 # every processor is blocked in the fetch

    started = monotonic_now
    stop_embedded(instance)

    # Without the :quiet hook, the processors would block for #long seconds
    # and Sidekiq would wait its whole shutdown timeout (5 s) for them.
    expect(monotonic_now - started).to be < 3
    expect(spec_log.string).not_to match(/Terminating \d+ busy threads/)
  end

  context "when Redis denies CLIENT TRACKING" do
    let(:user) { "lf-no-tracking-#{SecureRandom.hex(4)}" }

    before { redis.call("ACL", "SETUSER", user, "on", ">pw", "~*", "&*", "+@all", "-client") }
    after { redis.call("ACL", "DELUSER", user) }

    it "polls every :poll_range instead" do
      described_class.configuration[:poll_range] = 0.05..0.1
      url = RedisServer.url.sub("redis://", "redis://#{user}:pw@")
      fetcher = fetcher_for(build_capsule(queues: %w[a], redis_url: url))
      thread, started = waiting_fetch(fetcher)

      push_jobs("a", 1)

      expect_prompt_unit(thread, started, queue: "a")
    end
  end
end
