# frozen_string_literal: true

RSpec.describe Sidekiq::LimitFetch, "#retrieve_work" do
  def fetch_all(fetcher, max: 1_000)
    units = []
    while units.size < max && (unit = fetcher.retrieve_work)
      units << unit
    end
    units
  end

  it "returns a UnitOfWork for the next job and books a busy slot for the capsule" do
    capsule = build_capsule(queues: %w[a])
    fetcher = fetcher_for(capsule)
    payload = job_payload("a")
    push_payloads("a", [payload])

    unit = fetcher.retrieve_work

    expect(unit).to be_a(described_class::UnitOfWork)
    expect(unit).to be_a(Sidekiq::BasicFetch::UnitOfWork)
    expect(unit.queue).to eq("queue:a")
    expect(unit.queue_name).to eq("a")
    expect(unit.job).to eq(payload)
    expect(unit.config).to be(capsule)
    expect(busy_entries("a")).to eq([uuid_of(capsule)])
    expect(queue_length("a")).to eq(0)
  end

  it "returns jobs in the order they were pushed" do
    fetcher = fetcher_for(build_capsule(queues: %w[a]))
    jids = push_jobs("a", 5)

    expect(fetch_all(fetcher).map { |unit| JSON.parse(unit.job)["jid"] }).to eq(jids)
  end

  it "returns nil, booking nothing, when every queue is at its limit" do
    described_class.configuration[:fetch_timeout] = 0.2
    fetcher = fetcher_for(build_capsule(queues: %w[a], limits: {a: 0}))
    push_jobs("a", 1)

    started = monotonic_now
    expect(fetcher.retrieve_work).to be_nil
    expect(monotonic_now - started).to be_between(0.2, 5) # blocked for :fetch_timeout
    expect(busy_entries("a")).to eq([])
    expect(queue_length("a")).to eq(1)
  end

  describe "global limits" do
    it "stops at the limit, across capsules" do
      capsule = build_capsule(queues: %w[a], limits: {a: 2})
      other = build_capsule(queues: %w[a])
      fetcher = fetcher_for(capsule)
      other_fetcher = fetcher_for(other)
      push_jobs("a", 5)

      expect(fetcher.retrieve_work).not_to be_nil
      expect(other_fetcher.retrieve_work).not_to be_nil
      expect(fetcher.retrieve_work).to be_nil
      expect(other_fetcher.retrieve_work).to be_nil
      expect(queue_length("a")).to eq(3)
      expect(busy_entries("a")).to contain_exactly(uuid_of(capsule), uuid_of(other))
    end

    it "does not limit a queue without a limit" do
      fetcher = fetcher_for(build_capsule(queues: %w[a free], limits: {a: 1}))
      push_jobs("free", 30)

      expect(fetch_all(fetcher).size).to eq(30)
    end

    it "fetches nothing from a queue with limit 0, leaving the jobs in it" do
      fetcher = fetcher_for(build_capsule(queues: %w[paused other], limits: {paused: 0}))
      push_jobs("paused", 3)
      push_jobs("other", 2)

      expect(fetch_all(fetcher).map(&:queue)).to eq(%w[queue:other queue:other])
      expect(queue_length("paused")).to eq(3)
    end

    it "leaves jobs already running alone when a queue is paused with limit 0" do
      capsule = build_capsule(queues: %w[a])
      fetcher = fetcher_for(capsule)
      push_jobs("a", 3)
      running = fetcher.retrieve_work
      semaphore = described_class::Global::QueueSemaphore.new(capsule, "a")

      semaphore.limit = 0

      expect(fetcher.retrieve_work).to be_nil
      expect(busy_entries("a")).to eq([uuid_of(capsule)])
      running.acknowledge
      flush_acks(capsule)
      expect(busy_entries("a")).to eq([])
      expect(fetcher.retrieve_work).to be_nil
      expect(queue_length("a")).to eq(2)
    end
  end

  describe "process limits" do
    it "limits each capsule on its own" do
      capsule = build_capsule(queues: %w[a], process_limits: {a: 1})
      other = build_capsule(queues: %w[a])
      fetcher = fetcher_for(capsule)
      other_fetcher = fetcher_for(other)
      push_jobs("a", 5)

      expect(fetcher.retrieve_work).not_to be_nil
      expect(fetcher.retrieve_work).to be_nil
      expect(other_fetcher.retrieve_work).not_to be_nil
      expect(other_fetcher.retrieve_work).to be_nil
      expect(queue_length("a")).to eq(3)
    end

    it "fetches nothing with a process limit of 0" do
      fetcher = fetcher_for(build_capsule(queues: %w[a], process_limits: {a: 0}))
      push_jobs("a", 1)

      expect(fetcher.retrieve_work).to be_nil
    end

    it "applies both limits when a queue has both" do
      one = build_capsule(queues: %w[a], limits: {a: 3}, process_limits: {a: 2})
      two = build_capsule(queues: %w[a])
      fetcher_one = fetcher_for(one)
      fetcher_two = fetcher_for(two)
      push_jobs("a", 10)

      first = fetcher_one.retrieve_work
      expect(first).not_to be_nil
      expect(fetcher_one.retrieve_work).not_to be_nil
      expect(fetcher_one.retrieve_work).to be_nil # process limit 2
      expect(fetcher_two.retrieve_work).not_to be_nil
      expect(fetcher_two.retrieve_work).to be_nil # global limit 3
      first.acknowledge
      flush_acks(one)
      expect(fetcher_two.retrieve_work).not_to be_nil # 2 of 2 for two, 3 of 3 in all
      expect(fetcher_one.retrieve_work).to be_nil
      expect(fetcher_two.retrieve_work).to be_nil
      expect(busy_entries("a").tally).to eq(uuid_of(one) => 1, uuid_of(two) => 2)
    end
  end

  describe "queue order" do
    it "keeps strict order and skips a queue at its limit for the next eligible one" do
      capsule = build_capsule(queues: %w[high mid low], limits: {high: 1, mid: 0})
      fetcher = fetcher_for(capsule)
      push_jobs("high", 3)
      push_jobs("mid", 3)
      push_jobs("low", 3)

      high = fetcher.retrieve_work
      expect(high.queue).to eq("queue:high")
      expect(fetcher.retrieve_work.queue).to eq("queue:low")
      high.acknowledge
      expect(fetcher.retrieve_work.queue).to eq("queue:high")
      expect(fetcher.retrieve_work.queue).to eq("queue:low")
    end

    it "checks the queues in the order Sidekiq's queues_cmd gives" do
      fetcher = fetcher_for(build_capsule(queues: %w[a b]))
      push_jobs("a", 2)
      push_jobs("b", 2)
      allow(fetcher).to receive(:queues_cmd).and_return(%w[queue:b queue:a])

      expect(fetcher.retrieve_work.queue).to eq("queue:b")
      expect(fetcher.retrieve_work.queue).to eq("queue:b")
      expect(fetcher.retrieve_work.queue).to eq("queue:a")
    end

    it "keeps weighted order" do
      capsule = build_capsule(queues: [["heavy", 3], ["light", 1]])
      expect(capsule.mode).to eq(:weighted)
      fetcher = fetcher_for(capsule)
      push_jobs("heavy", 200)
      push_jobs("light", 200)

      picks = Array.new(200) { fetcher.retrieve_work.tap(&:acknowledge).queue_name }.tally

      # heavy comes first 3 times in 4: 150 expected, 120 is 5 standard deviations off
      expect(picks["heavy"]).to be > 120
      expect(picks["light"]).to be > 20
    end

    it "keeps random order" do
      capsule = build_capsule(queues: [["x", 1], ["y", 1]])
      expect(capsule.mode).to eq(:random)
      fetcher = fetcher_for(capsule)
      push_jobs("x", 200)
      push_jobs("y", 200)

      picks = Array.new(200) { fetcher.retrieve_work.tap(&:acknowledge).queue_name }.tally

      # 100 expected each, 60 is over 5 standard deviations off
      expect(picks["x"]).to be > 60
      expect(picks["y"]).to be > 60
    end

    it "skips a weighted queue at its limit for the other ones" do
      fetcher = fetcher_for(build_capsule(queues: [["heavy", 5], ["light", 1]], limits: {heavy: 0}))
      push_jobs("heavy", 5)
      push_jobs("light", 5)

      expect(fetch_all(fetcher).map(&:queue_name)).to eq(%w[light] * 5)
    end
  end

  describe "runtime changes" do
    it "applies a changed limit on the next fetch" do
      capsule = build_capsule(queues: %w[a], limits: {a: 1})
      fetcher = fetcher_for(capsule)
      semaphore = described_class::Global::QueueSemaphore.new(capsule, "a")
      push_jobs("a", 10)

      expect(fetcher.retrieve_work).not_to be_nil
      expect(fetcher.retrieve_work).to be_nil
      semaphore.limit = 3
      expect(fetcher.retrieve_work).not_to be_nil
      expect(fetcher.retrieve_work).not_to be_nil
      expect(fetcher.retrieve_work).to be_nil
      semaphore.limit = nil
      expect(fetch_all(fetcher).size).to eq(7)
    end

    it "applies a limit written to Redis by anything else on the next fetch" do
      fetcher = fetcher_for(build_capsule(queues: %w[a]))
      push_jobs("a", 5)
      expect(fetcher.retrieve_work).not_to be_nil

      redis.call("SET", queue_key("a", "limit"), "1")
      expect(fetcher.retrieve_work).to be_nil
      redis.call("SET", queue_key("a", "limit"), "2")
      expect(fetcher.retrieve_work).not_to be_nil
      expect(fetcher.retrieve_work).to be_nil
      redis.call("DEL", queue_key("a", "limit"))
      redis.call("SET", queue_key("a", "process_limit"), "3")
      expect(fetcher.retrieve_work).not_to be_nil
      expect(fetcher.retrieve_work).to be_nil
    end

    ["garbage", "-1", "2.5", "", "1e3", " "].each do |value|
      it "treats a limit of #{value.inspect} in Redis as 0" do
        fetcher = fetcher_for(build_capsule(queues: %w[a b]))
        push_jobs("a", 2)
        push_jobs("b", 2)
        redis.call("SET", queue_key("a", "limit"), value)
        redis.call("SET", queue_key("b", "process_limit"), value)

        expect(fetcher.retrieve_work).to be_nil
        expect(busy_entries("a") + busy_entries("b")).to eq([])
      end
    end
  end

  it "loads its function library again after FUNCTION FLUSH" do
    capsule = build_capsule(queues: %w[a], limits: {a: 2})
    fetcher = fetcher_for(capsule)
    push_jobs("a", 3)

    expect(fetcher.retrieve_work).not_to be_nil
    redis.call("FUNCTION", "FLUSH")
    expect(fetcher.retrieve_work).not_to be_nil
    redis.call("FUNCTION", "FLUSH")
    expect(fetcher.retrieve_work).to be_nil
    expect(busy_entries("a")).to eq([uuid_of(capsule)] * 2)
  end

  it "raises CommandError on a Redis error, booking no slot" do
    fetcher = fetcher_for(build_capsule(queues: %w[broken], limits: {broken: 1}))
    redis.call("SET", "queue:broken", "not a list")

    expect { fetcher.retrieve_work }.to raise_error(described_class::CommandError)
    expect(busy_entries("broken")).to eq([])
  end

  ["with:colons", "with space", "ünïcødé-队列", "a:busy", "*"].each do |name|
    it "handles the queue name #{name.inspect}" do
      capsule = build_capsule(queues: [name, "plain"], limits: {name => 1})
      fetcher = fetcher_for(capsule)
      payloads = [job_payload(name), job_payload(name)]
      push_payloads(name, payloads)
      push_jobs("plain", 1)

      unit = fetcher.retrieve_work
      expect(unit.queue).to eq("queue:#{name}")
      expect(unit.queue_name).to eq(name)
      expect(unit.job).to eq(payloads.first)
      expect(redis.call("GET", queue_key(name, "limit"))).to eq("1")
      expect(busy_entries(name)).to eq([uuid_of(capsule)])
      expect(fetcher.retrieve_work.queue).to eq("queue:plain") # name is at its limit
      unit.acknowledge
      flush_acks(capsule)
      expect(busy_entries(name)).to eq([])
      expect(fetcher.retrieve_work.job).to eq(payloads.last)
    end
  end

  # Sidekiq stops busy processors with Thread#raise(Sidekiq::Shutdown); it may
  # land while a fetch is under way. Such a fetch either hands out its job or
  # puts it back, freeing the slot: never neither.
  it "loses no job and leaks no slot when Thread#raise interrupts fetches" do
    capsule = build_capsule(queues: %w[a b])
    fetcher = fetcher_for(capsule)
    jids = push_jobs("a", 150) + push_jobs("b", 150)
    units = []
    interrupts = 0
    finished = false

    worker = Thread.new do
      Thread.current.report_on_exception = false
      # Shutdown may only land in blocking calls (the fetch itself, its
      # sleep), not while this loop keeps what the fetch returned.
      Thread.handle_interrupt(Sidekiq::Shutdown => :never) do
        until finished
          unit = nil
          begin
            Thread.handle_interrupt(Sidekiq::Shutdown => :on_blocking) { unit = fetcher.retrieve_work }
          rescue Sidekiq::Shutdown
            interrupts += 1
          end
          units << unit if unit
        end
      end
    rescue Sidekiq::Shutdown
      # A raise sent as the loop ended lands when it leaves the :never block;
      # uncaught, it would end the thread and re-raise from join below.
      nil
    end
    raiser = Thread.new do
      until finished
        sleep rand(0.0002..0.002)
        worker.raise(Sidekiq::Shutdown) unless finished
      end
    end

    wait_until(timeout: 60, message: -> { "the queues to drain: #{units.size} fetched, #{interrupts} interrupts" }) do
      queue_length("a").zero? && queue_length("b").zero?
    end
    finished = true
    raiser.join
    worker.join(5)
    worker.kill

    # A job given back by an interrupted fetch may still be on its way to its
    # queue when the queues look empty: wait for the slots to settle.
    held = -> { busy_entries("a").size + busy_entries("b").size }
    wait_until(timeout: 5, message: -> { "busy slots to settle at #{units.size}, they are #{held.call}" }) do
      held.call == units.size
    end
    fetched = units.map { |unit| JSON.parse(unit.job)["jid"] }
    queued = %w[a b].flat_map { |q| redis.call("LRANGE", "queue:#{q}", 0, -1) }.map { |job| JSON.parse(job)["jid"] }
    lost = (jids - fetched - queued).size
    leaked = held.call - units.size
    expect(interrupts).to be > 10
    expect(fetched.size).to eq(fetched.uniq.size)
    expect(lost: lost, leaked_slots: leaked).to eq(lost: 0, leaked_slots: 0),
      "after #{interrupts} interrupts, #{lost} jobs were lost and #{leaked} busy slots leaked"
  end

  it "serves a capsule with 200 queues, in strict order, within their limits" do
    names = Array.new(200) { |i| "q#{i}" }
    limits = names.each_with_index.select { |_, i| i.odd? }.to_h { |name, _| [name, 1] }
    capsule = build_capsule(queues: names, limits: limits, concurrency: 5)
    fetcher = fetcher_for(capsule)
    names.each { |name| push_jobs(name, 1) }

    first_round = fetch_all(fetcher)
    expect(first_round.map(&:queue_name)).to eq(names)

    # the odd queues are at their limit of 1, the even ones are free
    names.each { |name| push_jobs(name, 1) }
    second_round = fetch_all(fetcher)
    expect(second_round.map(&:queue_name)).to eq(names.select.with_index { |_, i| i.even? })
    expect(limits.keys.map { |name| busy_entries(name).size }.uniq).to eq([1])
  end
end
