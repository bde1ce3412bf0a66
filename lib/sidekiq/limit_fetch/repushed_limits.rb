# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # The limits of a job that Sidekiq pushes again from Redis (its scheduler,
    # its retry set, a retry from the API or the Web UI) and that carries a
    # limit_fetch Hash where the gem writes an Array: a process that does not
    # load the gem pushed it first, Sidekiq merged the class's declaration
    # into it, and JSON turned its callables into text ("#<Proc:0x…
    # (lambda)>").
    #
    # Such a job is never refused: Sidekiq's scheduler has already taken it
    # out of its set, and an error here would lose it. It gets the limits its
    # class declares in this process, when the class is loaded (or autoloads)
    # here: the same code as the pusher's, so its limits hold as if the
    # pusher had loaded the gem. Otherwise it gets those of the value it
    # carries, where that still reads as a declaration (a class limit, no
    # callable); otherwise none, and runs unlimited, as it did if it reached
    # a queue straight from that process. Each class's outcome is logged once
    # per process.
    class RepushedLimits
      include Sidekiq::Component

      @logged = Set.new
      @lock = Mutex.new

      # Whether +entry+ is seen for the first time in this process.
      def self.first?(entry)
        @lock.synchronize { !@logged.add?(entry).nil? }
      end

      # +config+: the Sidekiq::Config of the client pushing the job, for its
      # logger and reloader.
      def initialize(config, class_name, carried)
        @config = config
        @class_name = class_name
        @carried = carried
      end

      # As JobLimits#payload, but never raises: [] when no limits can be told.
      def payload(queue, &arguments)
        limits = nil
        # Sidekiq's scheduler runs outside Rails's executor, which a key
        # callable may need as a job does (autoloading the class, the queries
        # that locate an ActiveJob job's records); config[:reloader] is that
        # wrapper in a Rails server and a plain call elsewhere.
        config[:reloader].call { limits = limits_for(queue, &arguments) }
        limits
      rescue => e
        outcome(:none, "It runs without job limits (#{e.class}: #{e.message}).")
        []
      end

      private

      def limits_for(queue, &)
        declared = own_declaration
        limits = (declared || JobLimits.new(@class_name, @carried)).payload(queue, &)
        if declared
          outcome(:declared, "It gets the limits #{@class_name} declares in this process.")
        else
          outcome(:carried, "#{@class_name} is not defined in this process: the job gets the limits its " \
                            "limit_fetch option gives.")
        end
        limits
      end

      # The class's declaration here, nil if the class is not defined here.
      # A class defined without one raises (JobLimits.declared): it has no
      # limits now, whatever the payload says.
      def own_declaration
        job_class = Object.const_get(@class_name)
      rescue NameError
        nil
      else
        JobLimits.declared(job_class)
      end

      def outcome(kind, what)
        return unless self.class.first?([@class_name, kind])

        logger.warn("sidekiq-limit_fetch: a #{@class_name} job pushed again from Redis (scheduled or retried) " \
                    "carries its limit_fetch option instead of its limits: a process that pushes #{@class_name} " \
                    "does not load sidekiq-limit_fetch, as every process that pushes limited jobs should. " \
                    "#{what} (Logged once per class.)")
      end
    end
  end
end
