# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # A job class that keeps up to max_running_jobs of itself running while
    # work remains elsewhere (a table, a list): GitLab's limited capacity
    # worker, on the class limit. The class defines three methods:
    #
    #   class PruneJob
    #     include Sidekiq::Job
    #     include Sidekiq::LimitFetch::LimitedCapacity
    #
    #     def perform_work(*args) = Backlog.take_one&.prune   # one unit of work
    #     def remaining_work_count(*args) = Backlog.count
    #     def max_running_jobs = 3
    #   end
    #
    #   PruneJob.perform_with_capacity    # from a cron job: fills the free slots
    #
    # The fetch holds the class to max_running_jobs (its class limit, which
    # every job carries from its push: a new value applies from the next push
    # on), so nothing here counts slots to stay under it. Each job that ends
    # without error pushes one job to take its place while work remains: the
    # class stays at capacity and never grows through its own jobs. A job
    # that raises pushes none: Sidekiq's retry, with its backoff, or the next
    # perform_with_capacity takes its place (a failing backlog does not spin).
    module LimitedCapacity
      METHODS = %i[perform_work remaining_work_count max_running_jobs].freeze

      def self.included(base)
        base.include(Sidekiq::Job) unless base.include?(Sidekiq::Job)
        base.extend(ClassMethods)
        base.send(:declare_capacity)
      end

      module ClassMethods
        # Pushes as many jobs with +args+ as there are free slots (the limit
        # less the jobs running and parked) and units of work; returns their
        # jids. Jobs pushed but not yet fetched do not count: a call while
        # earlier ones wait in a busy queue may push more than the free
        # slots; the extras are parked at fetch and the class shrinks back
        # (see #push_successor).
        def perform_with_capacity(*args)
          state = capacity_state
          count = [state[:limit] - state[:running] - state[:parked], new.remaining_work_count(*args)].min
          count.positive? ? perform_bulk(Array.new(count) { args }) : []
        end

        # The class limit, its running and parked jobs: JobLimit#to_h.
        def capacity_state
          check_capacity_declaration
          JobLimit.for(self).to_h
        end

        # Subclasses have their own class limit, from their own method.
        def inherited(subclass)
          super
          subclass.send(:declare_capacity)
        end

        private

        # The limit is a callable, asked at each push: max_running_jobs is an
        # instance method, defined after the include, and may change at run
        # time (a setting, a feature flag).
        def declare_capacity
          @capacity = -> { capacity }
          sidekiq_options limit_fetch: {concurrency: @capacity}
        end

        def capacity
          check_methods
          value = new.max_running_jobs
          return value if value.is_a?(Integer) && value.between?(0, Limits::MAX)

          raise ArgumentError, "sidekiq-limit_fetch: #{self}#max_running_jobs must return an Integer " \
                               "from 0 to #{Limits::MAX}, got #{value.inspect}"
        end

        def check_methods
          missing = METHODS.reject { |name| method_defined?(name) }
          unless missing.empty?
            raise ArgumentError, "sidekiq-limit_fetch: #{self} includes LimitedCapacity but does not define " \
                                 "#{missing.join(", ")}"
          end
          return if instance_method(:perform).owner == LimitedCapacity

          # Its own perform would run without pushing the next job.
          raise ArgumentError, "sidekiq-limit_fetch: #{self} includes LimitedCapacity, which defines perform: " \
                               "define perform_work instead"
        end

        # A limit_fetch option of the class's own would replace the one
        # max_running_jobs gives, silently.
        def check_capacity_declaration
          declared = get_sidekiq_options["limit_fetch"]
          return if declared.is_a?(Hash) && declared["concurrency"].equal?(@capacity) && declared.size == 1

          raise ArgumentError, "sidekiq-limit_fetch: #{self} includes LimitedCapacity, whose limit is " \
                               "max_running_jobs: remove its limit_fetch option (got #{declared.inspect})"
        end
      end

      # Runs one unit of work, then pushes a job to take this one's place.
      def perform(*args)
        perform_work(*args)
        push_successor(args)
      end

      private

      # One job for one: never more, so the class's own jobs never grow in
      # number. None when no work remains, or when at least a limit's worth
      # of jobs waits parked: those fill every slot without this one, and so
      # a class over capacity (two perform_with_capacity calls close
      # together, a lowered max_running_jobs) shrinks back. Running jobs are
      # not counted: a job that just finished may still hold its slot for a
      # moment, and counting it could leave the class below capacity.
      def push_successor(args)
        return unless remaining_work_count(*args).positive?

        state = self.class.capacity_state
        return if state[:limit].positive? && state[:parked] >= state[:limit]

        self.class.perform_async(*args)
      end
    end
  end
end
