# frozen_string_literal: true

module LimitFetchBench
  # The `sidekiq` processes of one run (CliApp#spawn), named after the
  # variant, with `env` in their environment (and `config`, a sidekiq.yml,
  # if given: CliApp#config): started, awaited until each
  # has registered with Sidekiq, checked (Failure, with its log, if one
  # exited), stopped.
  class CliFleet
    attr_reader :pids

    def initialize(app, spec, env: {}, config: nil)
      @app = app
      @spec = spec
      @env = env
      @config = config
      @names = Array.new(spec["processes"]) { "#{spec["variant"]}-#{_1 + 1}" }
    end

    def start(redis)
      @pids = @names.map do |name|
        @app.spawn(name, threads: @spec["threads"], redis_url: @spec["redis_url"], env: @env,
          config: @config)
      end
      LimitFetchTools.wait_for("the sidekiq processes did not register", timeout: 60) do
        check!
        redis.call("SCARD", "processes") >= @pids.size
      end
      self
    end

    def check!
      @pids.zip(@names).each do |pid, name|
        status = LimitFetchTools::ChildProcess.ended(pid) or next
        raise Failure, "sidekiq process #{name} exited (#{status}):\n#{LimitFetchTools.tail(@app.log(name))}"
      end
    end

    def stop = @pids && LimitFetchTools::ChildProcess.stop(@pids, timeout: 15)
  end
end
