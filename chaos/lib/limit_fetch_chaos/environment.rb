# frozen_string_literal: true

module LimitFetchChaos
  # Where a run ran, for its report: the date, the machine, the versions and
  # the commit.
  module Environment
    module_function

    def read(conn)
      {date: Time.now.utc.strftime("%Y-%m-%d %H:%M UTC"), cpus: Etc.nprocessors,
       cpu: LimitFetchTools.cpu_model, kernel: Etc.uname[:release],
       ruby: RUBY_VERSION, sidekiq: Sidekiq::VERSION, redis: server(conn.call("INFO", "server")),
       commit: IO.popen(%w[git rev-parse --short HEAD], chdir: REPO, err: File::NULL, &:read).strip}
    end

    # "Redis 8.0.6" or "Valkey 9.1.0" (which reports a Redis version too).
    def server(info)
      valkey = info[/valkey_version:(\S+)/, 1]
      valkey ? "Valkey #{valkey}" : "Redis #{info[/redis_version:(\S+)/, 1]}"
    end
  end
end
