# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # What Sidekiq's death handlers get with a job discarded at its limit
    # (with discards_to_death_handlers: true): never raised.
    class Discarded < Error; end

    class << self
      # The app's handlers of jobs discarded at their limit (`on_limit:
      # :discard`), as Sidekiq's death_handlers: each is called with the job
      # (a Hash, as pushed) and the id of the limit that was full (a String,
      # "key:SyncJob#42", "class:ExportJob"), once per job, in the process
      # whose fetch discarded it.
      #
      #   Sidekiq::LimitFetch.discard_handlers << ->(job, limit) { ... }
      attr_reader :discard_handlers
    end

    @discard_handlers = []

    # Tells the app of the jobs one capsule's fetches discarded: one info
    # line each, then the discard handlers and, if configured, Sidekiq's
    # death handlers. A handler that raises goes to Sidekiq's error handlers;
    # the others still run, and so does the fetch.
    class Discards
      include Sidekiq::Component

      def initialize(capsule, to_death_handlers:)
        @config = capsule
        @to_death_handlers = to_death_handlers
      end

      # +discarded+: [[job, job limit id], ...], each job as its queue held it.
      def deliver(discarded)
        discarded.each { |payload, limit| deliver_one(payload, limit) }
      end

      private

      def deliver_one(payload, limit)
        job = parse(payload)
        logger.info("sidekiq-limit_fetch: discarded #{job_class(job)} #{job["jid"] || "?"}: #{limit} was at its limit")
        LimitFetch.discard_handlers.each { |handler| call(handler, job, limit, "discard handler") }
        return unless @to_death_handlers

        error = Discarded.new("discarded by sidekiq-limit_fetch: #{limit} was at its limit")
        config[:death_handlers].each { |handler| call(handler, job, error, "death handler") }
      end

      def call(handler, job, argument, what)
        handler.call(job, argument)
      rescue => e
        handle_exception(e, {context: "sidekiq-limit_fetch: error calling #{what}", job: job})
      end

      # A job the fetch script could not parse carries no limit, so is never
      # discarded; this keeps its bytes should it come.
      def parse(payload)
        Sidekiq.load_json(payload)
      rescue JSON::ParserError
        {"payload" => payload}
      end

      def job_class(job)
        job["wrapped"] || job["class"] || "?"
      end
    end
  end
end
