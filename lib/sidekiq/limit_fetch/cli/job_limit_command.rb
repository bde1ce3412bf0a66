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

        # A job limit's id, as the gem names them: class:ApiJob, key:ApiJob#42,
        # queue:imports (a fair queue's slots).
        def check_job_limit_id(id)
          return if id.start_with?(JobLimitId::CLASS) && id.size > JobLimitId::CLASS.size
          return if %i[key queue].include?(JobLimitId.kind(id))

          raise UsageError, "invalid job limit id #{id.inspect} (expected class:ApiJob, key:ApiJob#42 or queue:imports)"
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
          fair = fair_class_limit(id)
          limit = job_limit(id, fair)
          return print_json(limit.to_h.merge(explain: limit.explain)) if @options.json?

          @out.puts("#{id}: #{limit.explain}#{unknown_fair(id) unless fair}")
        end

        # Every job limit with running or parked jobs: one read of their ids,
        # one of the fair classes' tenants, up to three of what their jobs
        # carry, one of their states (and of the fair classes', for their
        # limits in force).
        def run_list_job
          ids = LimitFetch.admin.active_job_limits
          fair = FairShares.read
          states, carried = fair.read_states(ids)
          rows = with_fair(states.map { |state| state_h(state, carried[state.id]) }, fair).first(ids.size)
          @options.json? ? print_json(rows) : @out.print(JobTable.new(rows))
        end

        # JobLimit#to_h of a JobLimitState whose jobs carry +carried+.
        def state_h(state, carried)
          JobLimit.state_h(state, default(state.id, carried), carried&.rate)
        end

        # +rows+, a tenant's with its FairState#to_h as :fair, a fair class's
        # with {tenants: its tenants with work}.
        def with_fair(rows, fair)
          limits = rows.to_h { [_1[:id], _1[:limit]] }
          rows.map do |row|
            tenant = fair.state(row[:id], limits[fair.class_of(row[:id])])
            next row.merge(fair: tenant.to_h) if tenant

            count = fair.tenants_with_work(row[:id])
            count ? row.merge(fair: {tenants: count}) : row
          end
        end

        # +fair+: its fair class's JobLimit, if a tenant.
        def job_limit(id, fair = fair_class_limit(id))
          JobLimit.new(id, default: default(id, CarriedLimits.read([id])[id]), fair: fair)
        end

        # For a tenant of a fair class, the class's JobLimit: the loaded
        # app's declaration names it, else the core finds the tenant among
        # the fair classes' tenants with work, by what its jobs carry; for a
        # tenant of a fair queue (a key, or a keyless job's class), the
        # queue's, found so.
        def fair_class_limit(id)
          return if JobLimitId.kind(id) == :queue

          class_id = declaration(id)&.fair_class(id) || FairShares.read.class_of(id)
          JobLimit.new(class_id, default: default(class_id, CarriedLimits.read([class_id])[class_id])) if class_id
        end

        # What explain adds when it cannot tell whether +id+, found no fair
        # class's tenant, is one: a key with no jobs (a tenant's jobs name
        # its class) whose class the loaded app (-r) does not declare.
        def unknown_fair(id)
          return "" unless JobLimitId.kind(id) == :key && declaration(id).nil?

          state = LimitFetch.admin.job_limits([id]).first
          return "" if state.running.positive? || state.parked.positive?

          " (its class is not loaded: -r loads the app, to tell a fair share if it has one)"
        end

        # The default of +id+: declared, else the one its jobs carry
        # (+carried+, a CarriedLimits::Carried or nil).
        def default(id, carried) = declaration(id)&.default_for(id) || carried&.default

        # The declaration (JobLimits) of the class +id+'s scope names, if the
        # loaded app declares it.
        def declaration(id)
          name = JobLimitId.parse(id).scope.split("@").first
          job_class = Object.const_get(name) if name.match?(/\A[A-Z][\w:]*\z/)
          JobLimits.declared(job_class) if job_class
        rescue NameError, ArgumentError
          nil
        end
      end
    end
  end
end
