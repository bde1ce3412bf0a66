# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # Turns a BackOff raised by a job's perform, or an error its class lists
    # in `back_off_on:` (or the configuration's `back_off_on`), into a
    # back-off: the job returns as if it had finished, and its
    # acknowledgement parks it instead (PendingBackOff, UnitOfWork). Any other
    # error passes through, to fail and retry as Sidekiq does.
    #
    #   sidekiq_options limit_fetch: {key: ->(account_id, *) { account_id }, concurrency: 4,
    #                                 back_off_on: [Partner::TooManyRequests]}
    #
    # A listed error's Retry-After is its #retry_after, or its response's
    # header (RetryAfter.of_error); one that does not read takes the default.
    class BackOffMiddleware
      include Sidekiq::ServerMiddleware

      def initialize
        @lists = {}
        @lock = Mutex.new
      end

      def call(_instance, job, _queue)
        yield
      rescue BackOff => e
        raise unless limited?

        PendingBackOff.hold(job, e.retry_after)
      rescue => e
        raise unless limited? && back_off_on(job).any? { |listed| e.is_a?(listed) }

        PendingBackOff.hold(job, retry_after_of(e))
      end

      private

      # Whether the process fetches with LimitFetch (its Sidekiq::Config's
      # fetch_class, every capsule's), whose acknowledgement parks the job.
      # Under another fetch (BasicFetch after a rollback) the error goes on,
      # and Sidekiq retries the job: swallowed, it would be acknowledged, and
      # lost.
      def limited?
        fetch = config && config[:fetch_class]
        fetch.is_a?(Class) && fetch <= LimitFetch
      end

      def retry_after_of(error)
        RetryAfter.of_error(error)
      rescue ArgumentError => e
        logger.warn("sidekiq-limit_fetch: #{error.class} backs off with the default: #{e.message}")
        nil
      end

      # The errors that back off a job of +job+'s class: its declaration's
      # and the configuration's, resolved once per class.
      def back_off_on(job)
        name = (job["wrapped"] || job["class"]).to_s
        @lists[name] || @lock.synchronize { @lists[name] ||= BackOffOn.of(name) }
      end
    end
  end
end
