# frozen_string_literal: true

module LimitFetchChaos
  # Where a run ran, for its report: the date, the machine, the versions and
  # the commit.
  module Environment
    module_function

    def read(conn)
      {date: Time.now.utc.strftime("%Y-%m-%d %H:%M UTC"), cpus: Etc.nprocessors,
       cpu: File.read("/proc/cpuinfo")[/model name\s*:\s*(.+)/, 1], kernel: Etc.uname[:release],
       ruby: RUBY_VERSION, sidekiq: Sidekiq::VERSION, redis: conn.call("INFO", "server")[/redis_version:(\S+)/, 1],
       commit: IO.popen(%w[git rev-parse --short HEAD], chdir: REPO, err: File::NULL, &:read).strip}
    end
  end
end
