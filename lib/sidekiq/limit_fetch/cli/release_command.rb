# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    class CLI
      # `release --all [--force]`: its flags, which Options takes and checks
      # (prepended to it: they join its parser as it is built).
      module ReleaseFlags
        def all? = @all
        def force? = @force

        private

        def parser
          @parser || release_flags(super)
        end

        # +opts+, the parser, with --all and --force.
        def release_flags(opts)
          opts.on("--all", "release: every job the gem holds (required)") { @all = true }
          opts.on("--force", "release: even while capsules live (their processes being stopped)") { @force = true }
          opts
        end

        # --all and --force: release only, which needs --all (it releases
        # everything, or nothing).
        def check_release_flags
          flag = {"all" => all?, "force" => force?}.find { _2 }&.first
          raise UsageError, "--#{flag} applies to release only" if flag && command != "release"
          raise UsageError, "release: --all is required (it puts back every job the gem holds)" if release_without_all?
        end

        def release_without_all? = command == "release" && !all?
      end

      # `release --all`, which the CLI runs: every job the gem holds back in
      # its queue (ReleaseAll), and what each queue got. Refused while
      # capsules live, unless --force: exit status 1, as a refusal of Redis.
      module ReleaseCommand
        private

        def run_release
          result = LimitFetch.release_all(force: @options.force?)
          @options.json? ? print_json(result.to_h) : @out.print(ReleaseText.new(result))
        end

        # The line for an Error: the release's refusal, or Redis's.
        def refusal(error)
          return "release refused: #{error.message}" if error.is_a?(ReleaseAll::LiveCapsules)

          "Redis refused: #{Connection.redacted(error.message)}"
        end
      end
    end
  end
end
