# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    # One job limit, a class's or a key's, read and changed at run time from
    # any process (a console, a deploy task), with no capsule: a change holds
    # in every process at their next fetch, and parked jobs it makes room
    # for go back to their queues at once.
    #
    #   Sidekiq::LimitFetch::JobLimit.for(SyncJob, key: tenant.id).limit = 3 # premium tenant
    #   Sidekiq::LimitFetch::JobLimit.for(SyncJob, key: tenant.id).reset      # back to the default
    #   Sidekiq::LimitFetch::JobLimit.for(ExportJob).running
    #   Sidekiq::LimitFetch::JobLimit.for(ApiJob, key: account.id).rate = {limit: 200, period: 60}
    #   Sidekiq::LimitFetch::JobLimit.for(ApiJob, key: account.id).back_off(30)  # no start for 30 s
    #   Sidekiq::LimitFetch::JobLimit.for(ApiJob, key: account.id).resume        # starts again now
    #   Sidekiq::LimitFetch::JobLimit.active                                  # with running or parked jobs
    #
    # Also reached as Sidekiq::LimitFetch.job_limit(SyncJob, key: tenant.id)
    # and Sidekiq::LimitFetch.job_limits (the active ones).
    class JobLimit
      attr_reader :id

      class << self
        # The class limit of +job_class+, or with +key:+ that key's limit
        # (with +queue:+ for a class whose keys are per queue). The class's
        # `sidekiq_options limit_fetch:` gives its group and default.
        def for(job_class, key: nil, queue: nil)
          declaration = JobLimits.declared(job_class)
          id = key.nil? ? JobLimitId.of_class(job_class.to_s) : declaration.key_id(key, queue)
          fair = declaration.fair_class(id)
          fair &&= new(fair, default: declaration.default_for(fair))
          new(id, default: declaration.default_for(id), default_rate: declaration.rate_for(id), fair: fair)
        end

        # Every job limit with running or parked jobs, by id.
        def active
          admin.active_job_limits.map { |id| new(id) }
        end

        # #to_h of every job limit with running or parked jobs, read in one
        # round trip (their limit is the stored one: the default travels in
        # the jobs).
        def active_states
          admin.job_limits(admin.active_job_limits).map { |state| state_h(state) }
        end

        # A JobLimitState as a Hash, its limit the stored one or +default+,
        # its rate the stored one or +default_rate+.
        def state_h(state, default = nil, default_rate = nil)
          {id: state.id, limit: in_force(state, default), stored: state.stored, running: state.running,
           parked: state.parked, rate: (state.stored_rate || default_rate)&.to_h, stored_rate: state.stored_rate&.to_h,
           back_off: state.back_off&.to_h, adaptive: adaptive_h(state, default)}
        end

        # The limit in force of +state+ (a JobLimitState) whose default is
        # +default+ (an Integer, an adaptive limit's Range, or nil).
        def in_force(state, default)
          return state.stored || default unless default.is_a?(Range) && state.stored.nil?

          (state.adaptive || default.begin).clamp(default)
        end

        def adaptive_h(state, default)
          return unless default.is_a?(Range) && state.stored.nil?

          {value: in_force(state, default), floor: default.begin, ceiling: default.end}
        end

        # "backing off, 12.3 s left (BackOff from ApiJob, jid ...)" for a
        # BackOffState.
        def back_off_text(back_off)
          from = back_off.by == "console" ? "from the console" : "BackOff from #{back_off.by}, jid #{back_off.jid}"
          format("backing off, %<left>.1f s left (%<from>s)", left: back_off.left, from: from)
        end

        def admin
          LimitFetch.admin
        end
      end

      # +default+, +default_rate+: the limit and the rate when none is
      # stored, if known (the jobs carry them); +fair+: for a tenant of a
      # class declared fair:, the class's JobLimit.
      def initialize(id, default: nil, default_rate: nil, fair: nil)
        @id = id
        @default = default
        @default_rate = default_rate
        @fair = fair
      end

      # For a tenant of a class declared fair:, how the class's slots are
      # shared now (a FairState: #to_h, #to_s); nil otherwise.
      def fair
        FairState.new(id, JobLimit.admin.fair_tenants(@fair.id), @fair.limit, group: @fair.id) if @fair
      end

      # The limit the next fetch applies: the stored one, else the default
      # (an adaptive one's limit in force).
      def limit
        JobLimit.in_force(state, @default)
      end

      # An adaptive limit's {value:, floor:, ceiling:} (its limit in force,
      # and the range it moves in); nil for a fixed one, or one stored at
      # run time.
      def adaptive
        JobLimit.adaptive_h(state, @default)
      end

      # Stores +value+ (an Integer; 0 pauses) for every process.
      def limit=(value)
        JobLimit.admin.set_job_limit(id, Limits.coerce(id, value, :job_limit))
      end

      # Back to the jobs' default.
      def reset
        JobLimit.admin.set_job_limit(id, nil)
      end

      # The limit set at run time, or nil.
      def stored = state.stored

      # Jobs carrying it that run now, across every process.
      def running = state.running

      # Jobs set aside until it has room (and its rate lets them start).
      def parked = state.parked

      # The rate the next fetch applies (a Rate): the stored one, else the
      # declared one; nil: none.
      def rate
        stored_rate || @default_rate
      end

      # The rate set at run time (a Rate), or nil.
      def stored_rate = state.stored_rate

      # Stores a rate for every process ({limit:, period:}, "limit/period"
      # or a Rate), in place of the declared one; parked jobs it lets start
      # go back at once. Only a limit whose class declares a rate has one:
      # the fetch reads a stored rate only for those.
      def rate=(value)
        JobLimit.admin.set_rate(:job_limit, id, Rates.coerce("rate for job limit #{id.inspect}", value))
      end

      # Back to the declared rate.
      def reset_rate
        JobLimit.admin.set_rate(:job_limit, id, nil)
      end

      # The rate's window now (a RateWindow), nil without a rate.
      def rate_window
        rate = self.rate
        JobLimit.admin.rate_windows([[:job_limit, id, rate]]).first if rate
      end

      # Backs it off in every process for +seconds+ (as a BackOff's
      # retry_after: Numeric, a Retry-After value, a Time): no job of it
      # starts until then; one in force for longer is kept. Returns the
      # seconds until the back-off ends.
      def back_off(seconds)
        seconds = RetryAfter.seconds(seconds) or raise ArgumentError, "sidekiq-limit_fetch: back_off needs seconds"
        request = BackOffRequest.new(limit: id, carried: true, who: "console", jid: "", seconds: seconds)
        JobLimit.admin.back_off(request).ends_in
      end

      # Ends its back-off now: its parked jobs go back to their queues as it
      # has room. Returns how many went.
      def resume
        JobLimit.admin.resume(id).last
      end

      # The back-off in force (a BackOffState: +left+ seconds, +by+, +jid+),
      # or nil.
      def back_off_state = state.back_off

      # A one-line sentence (JobLimitText): "backing off, 12.3 s left
      # (BackOff from ApiJob, jid 5f0c...)", "at its limit 3/3, 12 parked",
      # "adaptive 7 of 1..20: ...", "tenant acme: 3 of its fair 3.3 of 10, ...".
      def explain
        state = self.state
        JobLimitText.new(state, @default, (fair unless state.back_off)).to_s
      end

      def to_h
        h = JobLimit.state_h(state, @default, @default_rate)
        @fair ? h.merge(fair: fair.to_h) : h
      end

      private

      # Its JobLimitState now.
      def state
        JobLimit.admin.job_limits([id]).first
      end
    end
  end
end
