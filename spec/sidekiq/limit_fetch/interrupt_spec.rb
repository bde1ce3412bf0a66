# frozen_string_literal: true

# A fetch blocked on a stalled Redis (CLIENT PAUSE) must give its thread back
# at once on Thread#raise and Thread#kill, must not hold the GVL meanwhile,
# and must not lose the job Redis hands out after the caller has gone.
RSpec.describe Sidekiq::LimitFetch, "interrupting a native call blocked on Redis" do
  # How long Redis stalls, in ms. Long enough that the interrupt comes well
  # before Redis answers, shorter than the command timeout Sidekiq resolves
  # (3 s), so that it is the interrupt, not a timeout, that ends the call. A
  # paused Redis cannot be unpaused early (CLIENT UNPAUSE is paused too).
  let(:pause_ms) { 2000 }
  # The requirement: the interrupted thread is back within 100 ms.
  let(:max_latency) { 0.1 }
  let(:interrupted) { Class.new(StandardError) }

  # A client of its own, so that none of the capsule's connections is paused
  # by its own command.
  def pause_redis
    RedisServer.with_client { |conn| conn.call("CLIENT", "PAUSE", pause_ms, "ALL") }
    monotonic_now + (pause_ms / 1000.0)
  end

  # A set-up capsule (its connection is open: Redis is paused only after it,
  # and the gem's function library is in Redis, so that a postponed fetch runs
  # as sent), one job in queue "a", and that job's jid.
  def capsule_with_job(redis_options: nil)
    capsule = build_capsule(queues: %w[a], redis_url: redis_options ? nil : RedisServer.url)
    capsule.config.redis = redis_options if redis_options
    client = setup_capsule(capsule)
    expect(client.fetch(%w[a])).to be_nil
    [client, push_jobs("a", 1).first]
  end

  # Scripts Redis has run (FCALL), in every connection.
  def scripts_run
    redis.call("INFO", "commandstats").scan(/^cmdstat_fcall:calls=(\d+)/).flatten.sum(&:to_i)
  end

  # A thread fetching from "a", and the thread's result or error, once Redis
  # has it: the fetch is then sure to be waiting on the paused server.
  def blocked_fetch(client)
    thread = Thread.new do
      Thread.current.report_on_exception = false
      client.fetch(%w[a])
    end
    expect(thread.join(0.3)).to be_nil, -> { "the fetch returned although Redis is paused: #{thread.value.inspect}" }
    thread
  end

  # Waits for the pause to end and for the fetch Redis postponed to run and
  # be undone: the job back in its queue, no busy slot left. (Right after the
  # pause, Redis may answer a new command before the postponed ones.)
  def expect_job_back(jid, pause_ends, scripts_before)
    sleep([pause_ends - monotonic_now, 0].max)
    describe = -> { "the job back in queue:a (queue:a=#{queue_length("a")}, busy=#{busy_entries("a").inspect})" }
    wait_until(timeout: 3, message: "Redis to run the postponed fetch") { scripts_run > scripts_before }
    wait_until(timeout: 3, message: describe) { queue_length("a") == 1 && busy_entries("a").empty? }
    expect(JSON.parse(redis.call("LINDEX", "queue:a", 0))["jid"]).to eq(jid)
    expect(holds_for?(0.3) { queue_length("a") == 1 && busy_entries("a").empty? }).to be(true), describe
  end

  it "returns from a blocked fetch within 100 ms of Thread#raise and puts the job back" do
    client, jid = capsule_with_job
    scripts_before = scripts_run
    pause_ends = pause_redis
    thread = blocked_fetch(client)

    raised_at = monotonic_now
    thread.raise(interrupted, "stop fetching")
    expect { thread.join }.to raise_error(interrupted, "stop fetching")
    latency = monotonic_now - raised_at
    warn format("interrupt_spec: Thread#raise -> join returned in %.1f ms", latency * 1000) if ENV["LF_TIMINGS"]

    expect(latency).to be < max_latency
    expect(monotonic_now).to be < pause_ends # not merely because Redis answered
    expect_job_back(jid, pause_ends, scripts_before)
    expect(busy_entries("a")).to eq([])
  end

  it "returns from a blocked fetch within 100 ms of Thread#kill and puts the job back" do
    client, jid = capsule_with_job
    scripts_before = scripts_run
    pause_ends = pause_redis
    thread = blocked_fetch(client)

    killed_at = monotonic_now
    thread.kill
    expect(thread.join).to be(thread)
    latency = monotonic_now - killed_at
    warn format("interrupt_spec: Thread#kill -> join returned in %.1f ms", latency * 1000) if ENV["LF_TIMINGS"]

    expect(latency).to be < max_latency
    expect(thread.status).to be(false) # ended normally, as killed threads do
    expect(monotonic_now).to be < pause_ends
    expect_job_back(jid, pause_ends, scripts_before)
    expect(busy_entries("a")).to eq([])
  end

  it "lets other Ruby threads run while a fetch waits on Redis" do
    client, jid = capsule_with_job
    pause_ends = pause_redis
    counter = 0
    stop = false
    ticker = Thread.new do
      until stop
        counter += 1
        Thread.pass
      end
    end
    thread = blocked_fetch(client)

    before = counter
    sleep 0.3
    ticks = counter - before
    still_blocked = thread.alive?
    stop = true
    ticker.join

    expect(still_blocked).to be(true), "the fetch returned within the 0.6 s of a 2 s pause"
    expect(ticks).to be > 1000
    # Left alone, the fetch gets its job once Redis answers.
    queue, job = thread.value
    expect([queue, JSON.parse(job)["jid"]]).to eq(["a", jid])
    expect(monotonic_now).to be >= pause_ends - 0.05
    expect(busy_entries("a")).to eq([client.uuid])
  end

  # Ruby interrupts the main thread for every signal it handles; a trap that
  # raises nothing (or a child's exit) must leave the fetch waiting for its
  # reply, not turn it into "no job".
  context "when the main thread gets a signal that raises nothing" do
    let(:pause_ms) { 800 }

    def expect_fetch_survives(client, jid, pause_ends)
      queue, job = client.fetch(%w[a])
      expect([queue, job && JSON.parse(job)["jid"]]).to eq(["a", jid])
      expect(monotonic_now).to be >= pause_ends - 0.05
      expect(busy_entries("a")).to eq([client.uuid])
    end

    it "waits on through a trapped signal" do
      client, jid = capsule_with_job
      handled = 0
      previous = trap("USR2") { handled += 1 }
      pause_ends = pause_redis
      signaller = Thread.new { sleep 0.2; Process.kill("USR2", Process.pid) } # rubocop:disable Style/Semicolon
      expect_fetch_survives(client, jid, pause_ends)
      signaller.join
      expect(handled).to eq(1)
    ensure
      trap("USR2", previous || "DEFAULT")
    end

    it "waits on through a child's exit" do
      client, jid = capsule_with_job
      pause_ends = pause_redis
      child = fork { sleep 0.2; exit!(0) } # rubocop:disable Style/Semicolon
      expect_fetch_survives(client, jid, pause_ends)
      expect(Process.wait2(child).last).to be_success
    end
  end

  # Sidekiq's documented `timeout:` is the command timeout of the gem's
  # connection too. A fetch that timed out on the client has still been sent:
  # Redis runs it once it can, and the job it pops must not vanish.
  it "loses no job when a fetch times out while Redis is paused" do
    client, jid = capsule_with_job(redis_options: {url: RedisServer.url, timeout: 0.5})
    scripts_before = scripts_run
    pause_ends = pause_redis

    started = monotonic_now
    expect { client.fetch(%w[a]) }.to raise_error(described_class::ConnectionError, /timed out/)
    expect(monotonic_now - started).to be_within(0.2).of(0.5) # the `timeout:` Sidekiq was given

    expect_job_back(jid, pause_ends, scripts_before)
    queue, job = client.fetch(%w[a]) # and the capsule fetches it normally afterwards
    expect([queue, JSON.parse(job)["jid"]]).to eq(["a", jid])
    expect(busy_entries("a")).to eq([client.uuid])
  end
end
