# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # Computes, when a job is pushed, the limits it carries (JobLimits), and
    # puts them in its payload in place of the class's declaration, which
    # Sidekiq merged into it (a callable cannot travel). Installed for
    # clients and servers alike: jobs push jobs.
    #
    # A job pushed again (a retry, a job coming back from parking) keeps what
    # it carries; one pushed again with a declaration where its limits should
    # be comes from a process without the gem (RepushedLimits). ActiveJob
    # jobs use their own class's declaration, and their key callable gets the
    # job's own arguments.
    class ClientMiddleware
      include Sidekiq::ClientMiddleware

      FIELD = "limit_fetch"

      def initialize
        @declarations = {}
        @lock = Mutex.new
      end

      def call(job_class, job, queue, _redis_pool)
        declared = job[FIELD]
        if declared.is_a?(Hash)
          limits = limits_of(job_class, job, declared, queue)
          limits.empty? ? job.delete(FIELD) : carry(job, limits)
        end
        yield
      end

      private

      # Sidekiq merges a class's sidekiq_options into a job only when it is
      # pushed with the class itself (Sidekiq::JobUtil#normalize_item): by
      # user code, ActiveJob's adapter, a job pushing another. There a bad
      # declaration raises, and nothing is pushed. A job Sidekiq pushes again
      # from Redis (its scheduler and retry set, the API, the Web UI) names
      # its class: a Hash there was left by a process without the gem, and
      # the job must not be refused (RepushedLimits).
      def limits_of(job_class, job, declared, queue)
        if job_class.is_a?(Class)
          declaration(class_name(job), declared).payload(queue) { arguments(job) }
        else
          repushed = RepushedLimits.new(config || Sidekiq.default_configuration, class_name(job), declared)
          repushed.payload(queue) { arguments(job) }
        end
      end

      # The limits first in the payload and its queue next: the fetch
      # decodes the limits there alone, and reads the queue of a parked job
      # it releases there, not the whole payload (lua/prelude/payloads.lua's carried).
      # spec/fixtures/job_limit_payloads.json holds the bytes both sides
      # agree on (payloads_spec.rb here, tests/payloads.rs there).
      def carry(job, limits)
        job.delete(FIELD)
        queue = job.delete("queue")
        rest = job.to_a
        job.clear
        job[FIELD] = limits
        job["queue"] = queue unless queue.nil?
        rest.each { |key, value| job[key] = value }
      end

      def class_name(job)
        (job["wrapped"] || job["class"]).to_s
      end

      # One checked JobLimits per class and declaration: checked at its first
      # push, whose error names what is wrong.
      def declaration(class_name, declared)
        @declarations[[class_name, declared]] ||
          @lock.synchronize { @declarations[[class_name, declared]] ||= JobLimits.new(class_name, declared) }
      end

      # An ActiveJob job's arguments are in the one argument of Sidekiq's
      # wrapper, serialized.
      def arguments(job)
        args = job["args"]
        data = args.first
        return args unless job["wrapped"] && data.is_a?(Hash) && data.key?("arguments") && defined?(::ActiveJob)

        ::ActiveJob::Arguments.deserialize(data["arguments"])
      end
    end
  end
end
