# frozen_string_literal: true

module LimitFetchBench
  # The driver's side of an idle run (see IdleRun): once the measuring
  # process is READY, pushes single jobs at random gaps of 20 to 80 ms into
  # the empty queue for `seconds`, then tells it how many.
  class Trickle
    GAPS = (0.02..0.08)

    def initialize(redis_url, seconds)
      @redis_url = redis_url
      @seconds = seconds
    end

    def call(stdin, stdout, deadline)
      return unless Measurement.read_until(stdout, "READY", deadline)

      stdin.puts "PUSHED #{push}"
      stdin.flush
    end

    private

    # The number of jobs pushed.
    def push
      pusher = Pusher.new(@redis_url).tap(&:warm)
      deadline = LimitFetchBench.monotonic + @seconds
      (1..).each do |count|
        sleep rand(GAPS)
        pusher.one
        return count if LimitFetchBench.monotonic >= deadline
      end
    ensure
      pusher&.close
    end
  end
end
