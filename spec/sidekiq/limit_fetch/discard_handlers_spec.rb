# frozen_string_literal: true

# Jobs discarded at their limit (`on_limit: :discard`) reach the app:
# Sidekiq::LimitFetch.discard_handlers, and Sidekiq's death handlers when
# configured, each once, with the whole job and the limit that was full,
# from the process whose fetch discarded it. Real Redis, real embedded
# Sidekiq, jobs pushed through Sidekiq's client.
RSpec.describe Sidekiq::LimitFetch, "discard handlers" do
  let(:queue) { LimitFetchSpec::KeyedJobs::QUEUE }
  let(:limit) { "key:LimitFetchSpec::WebhookJob#7" }
  let(:handled) { Thread::Queue.new }
  let(:deaths) { Thread::Queue.new }
  let(:errors) { Thread::Queue.new }

  after { described_class.discard_handlers.clear }

  def key_label(key) = LimitFetchSpec::KeyedJobs.key_label(key)

  def drained(queue) = Array.new(queue.size) { queue.pop }

  def discarded_count
    redis.call("HGET", LimitFetchHelpers::KEYS::DISCARDED, "LimitFetchSpec::WebhookJob").to_i
  end

  # An embedded Sidekiq whose death and error handlers record what they get.
  def start_recording_sidekiq
    config = build_config(queues: [queue], concurrency: 3)
    config.death_handlers << ->(job, error) { deaths << [job, error] }
    config.error_handlers << ->(error, context, _config) { errors << [error, context] }
    start_embedded(config)
  end

  # Runs webhook 7 ("first") and, while it runs, pushes +count+ duplicates
  # (discarded) then lets the first (@first) end, and waits for its slot to
  # be freed (its acknowledgement, which rides on its thread's next fetch,
  # reached Redis). Returns the duplicates' jids.
  def discard_duplicates(count)
    @first = first = LimitFetchSpec::WebhookJob.perform_async(7, "first")
    wait_until(message: "the first webhook to run") { running(key_label("webhook-7")) == 1 }
    duplicates = Array.new(count) { |i| LimitFetchSpec::WebhookJob.perform_async(7, "never-#{i}") }
    wait_until(message: "the duplicates to be discarded") { discarded_count == count }
    open_gate("first")
    wait_for_done([first])
    busy = LimitFetchHelpers::KEYS.job_busy(limit)
    wait_until(message: "the first's slot to be freed") { redis.call("LLEN", busy).zero? }
    duplicates
  end

  it "hands each discarded job, whole, to the handlers once with its limit, and logs it" do
    described_class.discard_handlers << ->(job, id) { handled << [job, id] }
    instance = start_recording_sidekiq
    duplicates = discard_duplicates(4)
    stop_embedded(instance)

    jobs = drained(handled)
    expect(jobs.map { |job, _| job["jid"] }).to match_array(duplicates)
    expect(jobs.map(&:last)).to all(eq(limit))
    expect(jobs.map { |job, _| job["args"] }).to match_array(Array.new(4) { |i| [7, "never-#{i}"] })
    expect(jobs.map(&:first)).to all(include("class" => "LimitFetchSpec::WebhookJob", "queue" => queue,
      "retry" => false, "limit_fetch" => [{"id" => limit, "concurrency" => 1, "discard" => true}]))
    duplicates.each do |jid|
      expect(spec_log.string.scan("discarded LimitFetchSpec::WebhookJob #{jid}: #{limit} was at its limit").size)
        .to eq(1)
    end
    expect(drained(deaths)).to eq([])
  end

  it "hands them to Sidekiq's death handlers too, with a LimitFetch::Discarded naming the limit, when configured" do
    described_class.configuration[:discards_to_death_handlers] = true
    described_class.discard_handlers << ->(job, id) { handled << [job, id] }
    instance = start_recording_sidekiq
    duplicates = discard_duplicates(2)
    stop_embedded(instance)

    died = drained(deaths)
    expect(died.map { |job, _| job["jid"] }).to match_array(duplicates)
    expect(died.map(&:last)).to all(be_a(described_class::Discarded))
    expect(died.map { |_, error| error.message }).to all(include(limit))
    expect(drained(handled).map { |job, _| job["jid"] }).to match_array(duplicates)
  end

  it "reports a handler that raises to Sidekiq's error handlers, and runs the others and the fetch on" do
    described_class.discard_handlers << ->(_job, _id) { raise "handler broke" }
    described_class.discard_handlers << ->(job, id) { handled << [job, id] }
    start_recording_sidekiq
    duplicates = discard_duplicates(2)
    later = LimitFetchSpec::WebhookJob.perform_async(7, "later")
    open_gate("later")
    wait_for_done([@first, later], timeout: 10)

    expect(drained(handled).map { |job, _| job["jid"] }).to match_array(duplicates)
    reported = drained(errors)
    expect(reported.map { |error, _| error.message }).to eq(["handler broke"] * 2)
    expect(reported.map { |_, context| context[:job]["jid"] }).to match_array(duplicates)
    expect(reported.map { |_, context| context[:context] }).to all(include("discard handler"))
  end

  it "refuses a discards_to_death_handlers that is not true or false, at boot" do
    described_class.configuration[:discards_to_death_handlers] = "yes"

    expect { setup_capsule(build_capsule(queues: [queue])) }
      .to raise_error(ArgumentError, /discards_to_death_handlers must be true or false, got "yes"/)
  end

  # A fetch whose thread walked away (Thread#raise while Redis was paused)
  # still discards when Redis runs it; the capsule holds the job until its
  # next call, or hands it over when Sidekiq quiets or stops.
  describe "a discard whose fetching thread walked away" do
    # Redis paused for long enough that the raise lands while the fetch
    # waits for it even on a loaded machine (a raise after the fetch
    # returned would land in the delivery itself), and briefly enough for
    # the spec's own client (its timeout: 1 s).
    def paused_fetch_raised(client)
      RedisServer.with_client { |conn| conn.call("CLIENT", "PAUSE", 900, "ALL") }
      thread = Thread.new do
        Thread.current.report_on_exception = false
        client.fetch([queue])
      end
      expect(thread.join(0.2)).to be_nil
      thread.raise(Interrupt)
      expect { thread.join }.to raise_error(Interrupt)
    end

    # A set-up capsule running webhook 7, a duplicate discarded by a fetch
    # whose caller is gone, and the duplicate's jid.
    def walked_away_discard
      capsule = build_capsule(queues: [queue])
      client = setup_capsule(capsule)
      expect(client.fetch([queue])).to be_nil
      LimitFetchSpec::WebhookJob.perform_async(7, "first")
      expect(client.fetch([queue])).not_to be_nil
      duplicate = LimitFetchSpec::WebhookJob.perform_async(7, "never")
      paused_fetch_raised(client)
      wait_until(message: "Redis to run the abandoned fetch") { discarded_count == 1 }
      [capsule, duplicate]
    end

    before { described_class.discard_handlers << ->(job, id) { handled << [job, id] } }

    {quiet: "quiets", shutdown: "stops"}.each do |event, verb|
      it "is handed over once when Sidekiq #{verb}" do
        capsule, duplicate = walked_away_discard
        # Nothing told meanwhile; and the abandoned fetch's reply, a moment
        # after Redis ran it, has reached the capsule.
        expect(holds_for?(0.5) { handled.empty? }).to be(true)

        described_class.public_send(event, capsule)

        expect(drained(handled).map { |job, id| [job["jid"], id] }).to eq([[duplicate, limit]])
        described_class.quiet(capsule)
        expect(handled).to be_empty
      end
    end

    it "is handed over once by the capsule's next fetches" do
      capsule, duplicate = walked_away_discard
      client = described_class.client(capsule)

      # The abandoned fetch's reply reaches the capsule a moment after Redis
      # ran it: the fetches that follow hand the discard over once it has.
      wait_until(message: "the discard handed over") do
        expect(client.fetch([queue])).to be_nil
        !handled.empty?
      end
      expect(drained(handled).map { |job, _| job["jid"] }).to eq([duplicate])
      client.fetch([queue])
      expect(handled).to be_empty
    end
  end
end
