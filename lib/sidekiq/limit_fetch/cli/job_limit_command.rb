# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    class CLI
      # The flags and arguments of the commands of one job limit, which
      # Options takes and checks (prepended to it: --job joins its parser as
      # it is built): --job (explain's too), a job limit's id, back-off's
      # DURATION.
      module JobLimitFlags
        # The commands that name a job limit by id without --job.
        COMMANDS = %w[back-off resume].freeze

        def job? = @job

        # The command's method in the CLI: run_<action>.
        def action
          return "#{command}_job" if %w[explain list].include?(command) && job?

          command.tr("-", "_")
        end

        private

        def parser
          @parser || super.on("--job", "set/unset/explain: of a job limit, named by its id; list: job limits") do
            @job = true
          end
        end

        def flag_commands(flag) = flag == "job" ? "set, unset, explain and list" : "set and unset"

        def flag_applies?(flag)
          %w[set unset].include?(command) || (flag == "job" && %w[explain list].include?(command))
        end

        def check_job_limit_values
          @duration = Duration.parse(args[1]) if command == "back-off"
          check_job_limit_id(args.first) if COMMANDS.include?(command) || (job? && command != "list")
        end

        # A job limit's id, as the gem names them: class:ApiJob, key:ApiJob#42.
        def check_job_limit_id(id)
          return if id.start_with?(JobLimitId::CLASS) && id.size > JobLimitId::CLASS.size
          return if id.start_with?(JobLimitId::KEY) && id.include?("#")

          raise UsageError, "invalid job limit id #{id.inspect} (expected class:ApiJob or key:ApiJob#42)"
        end
      end

      # The commands of job limits, which the CLI runs: `back-off ID
      # DURATION`, `resume ID`, `explain ID --job` and `list --job`. A
      # limit's default (an adaptive one's range) is its declaration's when
      # the app loaded (-r) declares its class, else the one its jobs carry.
      module JobLimitCommand
        private

        def run_back_off(id, _duration)
          limit = job_limit(id)
          limit.back_off(@options.duration)
          report_job(limit, "#{id}: #{limit.explain}")
        end

        def run_resume(id)
          limit = job_limit(id)
          ended, sent = LimitFetch.admin.resume(id)
          report_job(limit,
            ended ? "#{id}: resumed, #{sent} parked #{jobs(sent)} back to their queues" : "#{id}: was not backing off")
        end

        def jobs(count) = count == 1 ? "job" : "jobs"

        # A job limit's stored limit, or with --rate its stored rate (set,
        # unset).
        def stored(limit) = @options.rate? ? limit.stored_rate : limit.stored

        def run_explain_job(id)
          limit = job_limit(id)
          return print_json(limit.to_h.merge(explain: limit.explain)) if @options.json?

          @out.puts("#{id}: #{limit.explain}")
        end

        # Every job limit with running or parked jobs: one read of their ids,
        # up to three of what their jobs carry, one of their states.
        def run_list_job
          ids = LimitFetch.admin.active_job_limits
          carried = CarriedLimits.read(ids)
          rows = LimitFetch.admin.job_limits(ids).map { |state| state_h(state, carried[state.id]) }
          @options.json? ? print_json(rows) : @out.print(JobTable.new(rows))
        end

        # JobLimit#to_h of a JobLimitState whose jobs carry +carried+.
        def state_h(state, carried)
          JobLimit.state_h(state, default(state.id, carried), carried&.rate)
        end

        def job_limit(id)
          JobLimit.new(id, default: default(id, CarriedLimits.read([id])[id]))
        end

        # The default of +id+: declared, else the one its jobs carry
        # (+carried+, a CarriedLimits::Carried or nil).
        def default(id, carried) = declared_default(id) || carried&.default

        # The default the loaded app declares for +id+, if it declares the
        # class its scope names.
        def declared_default(id)
          name = JobLimitId.parse(id).scope.split("@").first
          job_class = Object.const_get(name) if name.match?(/\A[A-Z][\w:]*\z/)
          JobLimits.declared(job_class).default_for(id) if job_class
        rescue NameError, ArgumentError
          nil
        end
      end
    end
  end
end
