# frozen_string_literal: true

require "sidekiq"
require "sidekiq/fetch"

require "sidekiq/limit_fetch/version"
require "sidekiq/limit_fetch/native_extension"
Sidekiq::LimitFetch::NativeExtension.load
require "sidekiq/limit_fetch/fetch_options"
require "sidekiq/limit_fetch/registered_capsule"
require "sidekiq/limit_fetch/limits"
require "sidekiq/limit_fetch/rates"
require "sidekiq/limit_fetch/job_limit_id"
require "sidekiq/limit_fetch/job_key"
require "sidekiq/limit_fetch/fair_share"
require "sidekiq/limit_fetch/fair_state"
require "sidekiq/limit_fetch/fair_shares"
require "sidekiq/limit_fetch/declaration_check"
require "sidekiq/limit_fetch/job_limits"
require "sidekiq/limit_fetch/configuration"
require "sidekiq/limit_fetch/discards"
require "sidekiq/limit_fetch/job_limit_text"
require "sidekiq/limit_fetch/job_limit"
require "sidekiq/limit_fetch/repushed_limits"
require "sidekiq/limit_fetch/client_middleware"
require "sidekiq/limit_fetch/retry_after"
require "sidekiq/limit_fetch/back_off"
require "sidekiq/limit_fetch/back_off_on"
require "sidekiq/limit_fetch/pending_back_off"
require "sidekiq/limit_fetch/back_off_middleware"
require "sidekiq/limit_fetch/limited_capacity"
require "sidekiq/limit_fetch/redis_options"
require "sidekiq/limit_fetch/broken_limits"
require "sidekiq/limit_fetch/at_limit_clock"
require "sidekiq/limit_fetch/at_limit_warning"
require "sidekiq/limit_fetch/beat_log"
require "sidekiq/limit_fetch/heartbeat"
require "sidekiq/limit_fetch/acl_denial"
require "sidekiq/limit_fetch/client"
require "sidekiq/limit_fetch/unit_of_work"
require "sidekiq/limit_fetch/console"
require "sidekiq/limit_fetch/carried_limits"
require "sidekiq/limit_fetch/stats"
require "sidekiq/limit_fetch/api"
require "sidekiq/limit_fetch/boot_line"

module Sidekiq
  # A fetch strategy that caps how many jobs of each queue run at once,
  # across every process on the same Redis (`limits:`) and within each
  # capsule (`process_limits:`). The selection, the slot bookkeeping and the
  # reaping of dead processes live in a Rust core; this class keeps Sidekiq's
  # queue order (strict, weighted, random) and hands the core its queue list.
  class LimitFetch < BasicFetch
    # What the console, the Web UI, the CLI and Sidekiq's API read, loaded
    # when first used: a server that reads none of them is smaller (Waiting
    # loads sidekiq/api).
    autoload :Waiting, "sidekiq/limit_fetch/waiting"
    autoload :Queue, "sidekiq/limit_fetch/queue"
    autoload :FairQueue, "sidekiq/limit_fetch/fair_queue"
    autoload :Explanation, "sidekiq/limit_fetch/explanation"
    autoload :ReleaseAll, "sidekiq/limit_fetch/release_all"
    autoload :DataFormat, "sidekiq/limit_fetch/data_format"
    autoload :FairFigures, "sidekiq/limit_fetch/fair_figures"
    autoload :Global, "sidekiq/limit_fetch/global/queue_semaphore"

    @clients = {}.compare_by_identity
    @lock = Mutex.new

    class << self
      # Validates the capsule's limits, writes them where Redis has none,
      # registers the capsule and starts its heartbeat. Idempotent.
      def setup(capsule)
        @lock.synchronize { @clients[capsule] ||= Client.new(capsule).tap(&:start) }
      end

      # The capsule's client, set up on first use.
      def client(capsule)
        @clients[capsule] || setup(capsule)
      end

      # The capsule's client if it is set up in this process, else nil.
      def client?(capsule)
        @clients[capsule]
      end

      # Sends the pending acknowledgements of every capsule of this process
      # (they ride on the next fetch, or go within 2 ms), so that a reader
      # here sees the jobs it just finished as finished.
      def flush_acknowledgements
        @lock.synchronize { @clients.values }.each { |client| client.native.flush }
      end

      # Ends the capsule's waiting fetches: Sidekiq is quieting.
      def quiet(capsule)
        @clients[capsule]&.quiet
      end

      # Stops the capsule's heartbeat and frees what it holds in Redis.
      def shutdown(capsule)
        client = @lock.synchronize { @clients.delete(capsule) }
        client&.stop
      end
    end

    def initialize(capsule)
      super
      @client = LimitFetch.client(capsule)
    end

    # Blocks up to :fetch_timeout when nothing is eligible, without the GVL.
    def retrieve_work
      queue, job = @client.fetch(UnitOfWork.queue_names(queues_cmd), wait: true)
      UnitOfWork.fetched(queue, job, config) if queue
    end

    # Sidekiq's hard shutdown: push the unfinished jobs back and free their
    # slots in one atomic step.
    def bulk_requeue(inprogress)
      return if inprogress.empty?

      @client.requeue(inprogress)
      logger.info("Pushed #{inprogress.size} jobs back to Redis")
    rescue => e
      logger.warn("Failed to requeue #{inprogress.size} jobs: #{e.message}")
    end
  end
end
