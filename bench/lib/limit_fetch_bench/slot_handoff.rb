# frozen_string_literal: true

module LimitFetchBench
  # When the queue is at its limit, how soon a slot that another process
  # frees is taken by a waiting thread. A holder capsule (standing for that
  # other process) holds the queue's only slot, booked as the gem's fetch
  # books one (its UUID on the busy list, the job in its in-progress list);
  # a job waits in the queue while the embedded Sidekiq's threads wait; at a
  # random moment the holder acknowledges through the gem's own release.
  # Latency = the waiting job's start − the moment the release was sent.
  class SlotHandoff
    ROUNDS = 30
    GAPS = (0.02..0.08)
    HELD = '{"class":"LimitFetchBench::Held","jid":"held"}'

    def initialize(sidekiq, recorder, url)
      @sidekiq = sidekiq
      @recorder = recorder
      @url = url
      @queue = Variant::QUEUE
    end

    # Seconds, one per round.
    def run
      semaphore = Sidekiq::LimitFetch::Global::QueueSemaphore.new(@sidekiq.capsule, @queue)
      semaphore.limit = 1
      holder = Sidekiq::LimitFetch.setup(holder_capsule)
      Array.new(ROUNDS) { round(holder) }
    ensure
      semaphore&.limit = nil
      Sidekiq::LimitFetch.shutdown(holder_capsule)
    end

    private

    def round(holder)
      book(holder.uuid)
      done = @recorder.done
      redis_call("LPUSH", "queue:#{@queue}", job)
      sleep rand(GAPS)
      released_at = release(holder)
      wait_until { @recorder.done > done }
      wait_until { redis_call("LLEN", busy_key).zero? } # the job's own slot is free again
      @recorder.last_started_at - released_at
    end

    # The gem's acknowledgement, sent now; returns when it was sent.
    def release(holder)
      Process.clock_gettime(Process::CLOCK_REALTIME).tap do
        holder.acknowledge(@queue, HELD)
        holder.native.flush
      end
    end

    # What the gem's fetch script writes when it hands the holder a job.
    def book(uuid)
      @sidekiq.config.redis do |conn|
        conn.pipelined do |pipe|
          pipe.call("LPUSH", GemKeys.in_progress(uuid, @queue), HELD)
          pipe.call("RPUSH", busy_key, uuid)
        end
      end
    end

    def job
      JSON.generate("class" => Pusher::JOB, "queue" => @queue, "args" => [0], "retry" => false,
        "jid" => SecureRandom.hex(12), "created_at" => Time.now.to_f, "enqueued_at" => Time.now.to_f)
    end

    def busy_key = GemKeys.busy(@queue)

    def redis_call(*) = @sidekiq.config.redis { |conn| conn.call(*) }

    def wait_until(timeout: 5)
      deadline = LimitFetchBench.monotonic + timeout
      until yield
        raise Failure, "slot handoff: a round took over #{timeout} s" if LimitFetchBench.monotonic > deadline

        sleep 0.001
      end
    end

    def holder_capsule
      @holder_capsule ||= Sidekiq::Config.new.tap do |config|
        config.redis = {url: @url}
        config.logger = @sidekiq.config.logger
        config.queues = [@queue]
      end.default_capsule
    end
  end
end
