# frozen_string_literal: true

require "json"
require "securerandom"
require "sidekiq"
require "sidekiq/config"
require "sidekiq/embedded"
require "stringio"

# Helpers shared by the specs: Sidekiq configs and capsules wired to the test
# Redis, embedded Sidekiq instances, job pushing, Redis inspection and
# waiting. Everything started through these helpers is stopped after each
# example.
module LimitFetchHelpers
  # The blocks `require "sidekiq-limit_fetch"` passed to
  # Sidekiq.configure_server, captured right after the require (Sidekiq drops
  # them once an instance runs).
  SERVER_CONFIG_BLOCKS = Array(Sidekiq.instance_variable_get(:@config_blocks)).dup.freeze

  # The gem's keys, named by the core's data model (src/keys.rs).
  KEYS = Sidekiq::LimitFetch::Keys
  KEY_PREFIX = KEYS::PREFIX
  CAPSULES_KEY = KEYS::CAPSULES
  QUEUE_KEY_KINDS = %w[limit process_limit busy paused rate starts limit_range adaptive].freeze

  # ---- Redis, from the spec's side ----

  def redis
    @redis ||= RedisServer.client
  end

  # A queue's key of the gem: +kind+ one of QUEUE_KEY_KINDS.
  def queue_key(name, kind)
    kind = kind.to_s
    raise ArgumentError, "no queue key #{kind.inspect}" unless QUEUE_KEY_KINDS.include?(kind)

    KEYS.public_send(kind, name)
  end

  def heartbeat_key(uuid)
    KEYS.heartbeat(uuid)
  end

  def in_progress_key(uuid, queue)
    KEYS.in_progress(uuid, queue)
  end

  def in_progress(uuid, queue)
    redis.call("LRANGE", in_progress_key(uuid, queue), 0, -1)
  end

  # Acknowledgements ride on the capsule's next fetch; sends them now, so
  # that a spec may look at the slots they free.
  def flush_acks(capsule)
    Sidekiq::LimitFetch.client(capsule).native.flush
  end

  def busy_entries(queue)
    redis.call("LRANGE", queue_key(queue, "busy"), 0, -1)
  end

  def registered_capsules
    redis.call("SMEMBERS", CAPSULES_KEY).sort
  end

  def limit_fetch_keys
    redis.call("KEYS", "#{KEY_PREFIX}*").sort
  end

  def queue_length(queue)
    redis.call("LLEN", KEYS.queue(queue))
  end

  # ---- Sidekiq configuration ----

  # A Sidekiq::Config of its own (not Sidekiq.default_configuration), for one
  # simulated process. Its lifecycle events and error handlers are its own:
  # Sidekiq::Config::DEFAULTS shares those between configs otherwise.
  def build_config(queues: ["default"], limits: nil, process_limits: nil, concurrency: 2,
    redis_url: RedisServer.url, fetch_class: Sidekiq::LimitFetch)
    config = Sidekiq::Config.new(
      lifecycle_events: Sidekiq::Config::DEFAULTS[:lifecycle_events].transform_values { [] },
      error_handlers: [],
      death_handlers: [],
      labels: Set.new,
      timeout: 5
    )
    config.redis = {url: redis_url} if redis_url
    config.logger = spec_logger
    config[:limits] = limits if limits
    config[:process_limits] = process_limits if process_limits
    config[:fetch_class] = fetch_class
    config.queues = queues
    config.concurrency = concurrency
    configs << config
    config
  end

  # The default capsule of a fresh config.
  def build_capsule(**)
    build_config(**).default_capsule
  end

  # Another capsule in +config+, set up for limited fetching like the README's
  # "additional capsules" example.
  def add_capsule(config, name, queues:, concurrency: 2)
    config.capsule(name) do |capsule|
      capsule.queues = queues
      capsule.concurrency = concurrency
    end
  end

  # Sidekiq::LimitFetch.setup, remembering the capsule so that it is shut
  # down after the example.
  def setup_capsule(capsule)
    set_up_capsules << capsule
    Sidekiq::LimitFetch.setup(capsule)
  end

  # A set-up capsule's fetcher, as Sidekiq's processors would get it.
  def fetcher_for(capsule)
    setup_capsule(capsule) unless set_up_capsules.include?(capsule)
    Sidekiq::LimitFetch.new(capsule)
  end

  def uuid_of(capsule)
    Sidekiq::LimitFetch.client(capsule).uuid
  end

  # Runs a real embedded Sidekiq for +config+ the way Sidekiq.configure_embed
  # would: the Sidekiq.configure_server blocks that `require
  # "sidekiq-limit_fetch"` registered run on the config first (they set the
  # fetch class, set up the capsules on :startup and deregister them on :exit).
  # configure_embed itself cannot be used: it only works once per process.
  def start_embedded(config)
    SERVER_CONFIG_BLOCKS.each { |block| block.call(config) }
    instance = Sidekiq::Embedded.new(config)
    set_up_capsules.concat(config.capsules.values)
    embedded_instances << instance
    instance.run
    instance
  end

  def stop_embedded(instance)
    return unless embedded_instances.delete(instance)

    instance.stop
  end

  # ---- Jobs ----

  def job_payload(queue, seconds: 0.02, gate: nil, klass: "LimitFetchSpec::TrackedJob", args: nil)
    now = Process.clock_gettime(Process::CLOCK_REALTIME, :millisecond)
    JSON.generate(
      "class" => klass,
      "args" => args || [queue, seconds, gate].compact,
      "queue" => queue,
      "jid" => SecureRandom.hex(12),
      "retry" => false,
      "created_at" => now,
      "enqueued_at" => now
    )
  end

  # Pushes +count+ TrackedJobs to +queue+ the way Sidekiq::Client does (LPUSH,
  # so they are fetched in push order) and returns their jids, in that order.
  def push_jobs(queue, count = 1, seconds: 0.02, gate: nil)
    payloads = Array.new(count) { job_payload(queue, seconds: seconds, gate: gate) }
    push_payloads(queue, payloads)
    payloads.map { |payload| JSON.parse(payload)["jid"] }
  end

  def push_payloads(queue, payloads)
    redis.pipelined do |pipe|
      pipe.call("SADD", "queues", queue)
      payloads.each_slice(100) { |slice| pipe.call("LPUSH", KEYS.queue(queue), *slice) }
    end
    payloads
  end

  def open_gate(gate)
    redis.call("SET", LimitFetchSpec::Recorder.gate_key(gate), "1")
  end

  # ---- What the jobs recorded ----

  def max_running(queue)
    redis.call("GET", LimitFetchSpec::Recorder.max_key(queue)).to_i
  end

  def running(queue)
    redis.call("GET", LimitFetchSpec::Recorder.running_key(queue)).to_i
  end

  # worker label => the most jobs of +queue+ it ran at once
  def max_running_per_worker(queue)
    workers = redis.call("SMEMBERS", LimitFetchSpec::Recorder.workers_key(queue)).sort
    workers.to_h { |worker| [worker, redis.call("GET", LimitFetchSpec::Recorder.max_key(queue, worker)).to_i] }
  end

  # ["<worker label> <jid>", ...] in start order
  def started(queue)
    redis.call("LRANGE", LimitFetchSpec::Recorder.started_key(queue), 0, -1)
  end

  def done_jids(queue = nil)
    redis.call("LRANGE", LimitFetchSpec::Recorder.done_key(queue), 0, -1)
  end

  # ---- Waiting ----

  def monotonic_now
    Process.clock_gettime(Process::CLOCK_MONOTONIC)
  end

  # Polls the block until it returns something truthy and returns that; fails
  # the example after +timeout+ seconds with +message+ (a String or a lambda
  # that describes the current state).
  def wait_until(timeout: 10, interval: 0.05, message: "condition")
    deadline = monotonic_now + timeout
    loop do
      result = yield
      return result if result

      if monotonic_now > deadline
        text = message.respond_to?(:call) ? message.call : message
        raise RSpec::Expectations::ExpectationNotMetError, "timed out after #{timeout}s waiting for #{text}"
      end
      sleep interval
    end
  end

  # Waits until the jobs have recorded as many done as +jids+, then checks
  # that each ran exactly once.
  def wait_for_done(jids, timeout: 30)
    wait_until(timeout: timeout, message: -> { "#{jids.size} jobs done, #{done_jids.size} are" }) do
      done_jids.size >= jids.size
    end
    expect(done_jids.sort).to eq(jids.sort)
  end

  # Checks the block keeps returning something truthy for +seconds+.
  def holds_for?(seconds, interval: 0.05)
    deadline = monotonic_now + seconds
    while monotonic_now < deadline
      return false unless yield

      sleep interval
    end
    true
  end

  # ---- Logs ----

  def spec_log
    @spec_log ||= StringIO.new
  end

  def spec_logger
    @spec_logger ||= Sidekiq::Logger.new(spec_log, level: :info).tap do |logger|
      logger.formatter = Sidekiq::Logger::Formatters::Plain.new
    end
  end

  # ---- Bookkeeping ----

  def configs
    @configs ||= []
  end

  def set_up_capsules
    @set_up_capsules ||= []
  end

  def embedded_instances
    @embedded_instances ||= []
  end

  def cleanup_limit_fetch
    embedded_instances.dup.each do |instance|
      stop_embedded(instance)
    rescue => e
      warn "stopping an embedded Sidekiq failed: #{e.class}: #{e.message}"
    end
    set_up_capsules.uniq.each do |capsule|
      Sidekiq::LimitFetch.shutdown(capsule)
    rescue => e
      warn "Sidekiq::LimitFetch.shutdown failed: #{e.class}: #{e.message}"
    end
    configs.each do |config|
      config.capsules.each_value { |capsule| capsule.local_redis_pool.shutdown(&:close) }
      config.local_redis_pool.shutdown(&:close)
    rescue => e
      warn "closing Redis pools failed: #{e.class}: #{e.message}"
    end
    @redis&.close
    @redis = nil
    [embedded_instances, set_up_capsules, configs].each(&:clear)
  end
end
