# frozen_string_literal: true

module LimitFetchBench
  # The gem as it was at another git revision (bin/bench --baseline REV), so
  # that a change is measured before and after in one invocation. Its files,
  # exported with `git archive` (no worktree is registered, so a bench that
  # dies leaves nothing in .git), go to tmp/bench-baseline, removed at the
  # end; its extension is compiled there as bin/bench compiles this
  # checkout's, but into target/bench-baseline, so that this checkout's build
  # is untouched and the next baseline builds incrementally. The measuring
  # processes of its variants load its lib/ (see bench/run_one.rb).
  class Baseline
    DIR = File.join(REPO, "tmp", "bench-baseline")
    TARGET = File.join(REPO, "target", "bench-baseline")

    attr_reader :ref, :rev

    def initialize(ref)
      @ref = ref
    end

    def lib = File.join(DIR, "lib")

    # Exports and compiles; the build's output goes to `log`.
    def build(log)
      @rev = git("rev-parse", "--verify", "--short", "#{@ref}^{commit}").strip
      @subject = git("log", "-1", "--format=%s", @rev).strip
      export
      compile(log)
      self
    end

    def remove = FileUtils.rm_rf(DIR)

    def to_h = {"ref" => @ref, "rev" => @rev, "subject" => @subject}

    private

    def export
      remove
      FileUtils.mkdir_p(DIR)
      statuses = Open3.pipeline(["git", "archive", "--format=tar", @rev, {chdir: REPO}], ["tar", "-x", "-C", DIR])
      raise Failure, "--baseline #{@ref}: git archive #{@rev} | tar -x failed" unless statuses.all?(&:success?)

      # git archive gives each file its commit's time, older than the last
      # baseline's build: cargo, which judges by mtime, would keep that build.
      FileUtils.touch(Dir.glob("#{DIR}/**/*").select { File.file?(_1) })
    end

    # bin/lib/ruby_driver.bash's steps, in the exported checkout.
    def compile(log)
      bundled = step(log, "bundle", "install", "--local", "--quiet") || step(log, "bundle", "install", "--quiet")
      compiled = bundled && step(log, "bundle", "exec", "rake", "compile")
      raise Failure, "--baseline #{@ref}: the build failed:\n#{LimitFetchTools.tail(log)}" unless compiled
    end

    def step(log, *command)
      env = {"BUNDLE_GEMFILE" => File.join(DIR, "Gemfile"), "RB_SYS_CARGO_TARGET_DIR" => TARGET}
      File.write(log, "==> #{command.join(" ")}\n", mode: "a")
      LimitFetchTools.unbundled { system(env, *command, chdir: DIR, %i[out err] => [log, "a"]) }
    end

    def git(*args)
      out, err, status = Open3.capture3("git", *args, chdir: REPO)
      raise Failure, "--baseline #{@ref}: git #{args.first} failed: #{err.strip}" unless status.success?

      out
    end
  end
end
