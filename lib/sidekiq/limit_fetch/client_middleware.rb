# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # Computes, when a job is pushed, the limits it carries (JobLimits), and
    # puts them in its payload in place of the class's declaration, which
    # Sidekiq merged into it (a callable cannot travel). Installed for
    # clients and servers alike: jobs push jobs.
    #
    # A job pushed again (a retry, a job coming back from parking) keeps what
    # it carries. ActiveJob jobs use their own class's declaration, and their
    # key callable gets the job's own arguments.
    class ClientMiddleware
      include Sidekiq::ClientMiddleware

      FIELD = "limit_fetch"

      def initialize
        @declarations = {}
        @lock = Mutex.new
      end

      def call(_job_class, job, queue, _redis_pool)
        declared = job[FIELD]
        if declared.is_a?(Hash)
          limits = declaration(class_name(job), declared).payload(queue) { arguments(job) }
          limits.empty? ? job.delete(FIELD) : carry(job, limits)
        end
        yield
      end

      private

      # The limits first in the payload and its queue next: the fetch
      # decodes the limits there alone, and reads the queue of a parked job
      # it releases there, not the whole payload (prelude.lua's carried).
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
