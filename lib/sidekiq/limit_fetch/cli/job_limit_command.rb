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
          return "explain_job" if command == "explain" && job?

          command.tr("-", "_")
        end

        private

        def parser
          @parser || super.on("--job", "set/unset/explain: of a job limit, named by its id") { @job = true }
        end

        def flag_commands(flag) = flag == "job" ? "set, unset and explain" : "set and unset"

        def flag_applies?(flag) = %w[set unset].include?(command) || (flag == "job" && command == "explain")

        def check_job_limit_values
          @duration = Duration.parse(args[1]) if command == "back-off"
          check_job_limit_id(args.first) if COMMANDS.include?(command) || job?
        end

        # A job limit's id, as the gem names them: class:ApiJob, key:ApiJob#42.
        def check_job_limit_id(id)
          return if id.start_with?(JobLimitId::CLASS) && id.size > JobLimitId::CLASS.size
          return if id.start_with?(JobLimitId::KEY) && id.include?("#")

          raise UsageError, "invalid job limit id #{id.inspect} (expected class:ApiJob or key:ApiJob#42)"
        end
      end

      # The commands of one job limit, by id, which the CLI runs:
      # `back-off ID DURATION`, `resume ID` and `explain ID --job`. A limit's
      # default (an adaptive one's range) is its declaration's when the app
      # loaded (-r) declares its class, else the one its jobs carry.
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

        def job_limit(id)
          JobLimit.new(id, default: declared_default(id) || CarriedLimits.read([id])[id]&.default)
        end

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
