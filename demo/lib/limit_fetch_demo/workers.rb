# frozen_string_literal: true

module LimitFetchDemo
  # The Sidekiq processes: `bundle exec sidekiq -C config/sidekiq.yml -r ./app.rb`
  # in the app directory, each logging to log/<name>.log.
  class Workers
    Worker = Data.define(:name, :pid, :log)

    def initialize(app, redis_url, names)
      @app = app
      @redis_url = redis_url
      @names = names
      @workers = []
    end

    def start
      @workers = @names.map { |name| spawn(name) }
      self
    end

    # Waits until every process has registered with Sidekiq (it is then fetching).
    def wait_until_running(timeout:)
      LimitFetchTools.wait_for("the Sidekiq processes did not start", timeout: timeout) do
        check!
        Sidekiq::ProcessSet.new.size >= @workers.size
      end
    end

    # Raises Failure if a process has exited.
    def check!
      @workers.each do |worker|
        status = LimitFetchTools::ChildProcess.ended(worker.pid) or next
        raise Failure, "Sidekiq process #{worker.name} exited (#{status})"
      end
    end

    def stop
      LimitFetchTools::ChildProcess.stop(@workers.map(&:pid), timeout: 15)
    end

    # The end of each process's log, to show when something went wrong.
    def logs
      @workers.map { |worker| "#{worker.log}:\n#{LimitFetchTools.tail(worker.log)}" }.join
    end

    private

    def spawn(name)
      log = @app.log(name)
      env = {"BUNDLE_GEMFILE" => @app.gemfile, "REDIS_URL" => @redis_url, "DEMO_WORKER" => name}
      pid = LimitFetchTools::ChildProcess.spawn(env, "bundle", "exec", "sidekiq", "-C", "config/sidekiq.yml",
        "-r", "./app.rb", log: log, chdir: @app.dir)
      Worker.new(name: name, pid: pid, log: log)
    end
  end
end
