# frozen_string_literal: true

module LimitFetchBench
  # Reads what Redis did between two points: calls and time per command
  # (INFO commandstats, zeroed by CONFIG RESETSTAT) and its CPU time (INFO
  # cpu, user + sys). Its own INFO and CONFIG calls are left out.
  class RedisProbe
    OWN = /\A(info|config)/

    def initialize(url)
      @client = RedisClient.new(url: url)
    end

    def reset
      @client.call("CONFIG", "RESETSTAT")
      @cpu = cpu
    end

    # Since the last reset: {"calls" => {command => n}, "usec" => {command => us}, "cpu" => seconds}
    def read
      calls = {}
      usec = {}
      @client.call("INFO", "commandstats").scan(/^cmdstat_(\S+?):calls=(\d+),usec=(\d+)/) do |name, n, us|
        next if name.match?(OWN)

        calls[name] = n.to_i
        usec[name] = us.to_i
      end
      {"calls" => calls, "usec" => usec, "cpu" => cpu - @cpu}
    end

    def call(*command) = @client.call(*command)

    def close = @client.close

    private

    def cpu
      info = @client.call("INFO", "cpu")
      info[/used_cpu_user:([\d.]+)/, 1].to_f + info[/used_cpu_sys:([\d.]+)/, 1].to_f
    end
  end
end
