# frozen_string_literal: true

module LimitFetchTools
  # A server the tools run as a child process (RedisServer, Downstream):
  # started until it answers, stopped with TERM. The class gives its
  # #command, its #name and #address (in the error), #ready?, #log_path and its
  # BOOT_TIMEOUT and STOP_TIMEOUT.
  module Served
    # Returns once it answers; raises Failure, with its log, if it will not.
    def start
      @pid = ChildProcess.spawn({}, *command, log: log_path)
      LimitFetchTools.wait_for("#{name} did not answer on #{address}", timeout: self.class::BOOT_TIMEOUT) do
        ready?
      end
      self
    rescue Failure => e
      stop
      raise Failure, "#{e.message}:\n#{LimitFetchTools.tail(log_path)}"
    end

    # SIGTERM (killed after STOP_TIMEOUT seconds).
    def stop
      ChildProcess.stop([@pid], timeout: self.class::STOP_TIMEOUT) if @pid
      @pid = nil
    end
  end
end
