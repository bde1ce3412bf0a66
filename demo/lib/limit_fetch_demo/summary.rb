# frozen_string_literal: true

module LimitFetchDemo
  # The closing report: per queue, the most jobs seen running at once, across
  # the processes and within each, against the limits; the throughput; and
  # the job limits' part (SpotlightSummary).
  class Summary
    COLUMNS = Columns.new(-11, 6, 17, 21, -1)
    HEADER = COLUMNS.line("queue", "jobs", "max at once/limit", "max per process/limit", "result")

    def initialize(plan, snapshot, spotlight:, enqueued_at:, busy_slots:)
      @plan = plan
      @spotlight = spotlight
      @snapshot = snapshot
      @enqueued_at = enqueued_at
      @busy_slots = busy_slots
    end

    # Prints the report; returns the exit status: 0 if every limit held and
    # every job ran.
    def print
      puts("", headline, "", HEADER, *@plan.queues.map { row(_1) }, "", *@spotlight.lines, "", *verdict)
      problems.empty? ? 0 : 1
    end

    private

    def headline
      done = @snapshot.total(:done)
      seconds = (@snapshot.finished_at || Float::NAN) - @enqueued_at
      "Summary: #{done} jobs done in #{seconds.round(2)} s, #{(done / seconds).round} jobs/s (#{@plan.describe})"
    end

    def row(queue)
      per_process = @plan.workers.map { @snapshot.max_per_worker[_1][queue] }.join(", ")
      COLUMNS.line(queue, @snapshot.done[queue],
        "#{@snapshot.max[queue]} / #{@plan.limits.fetch(queue, "-")}",
        "#{per_process} / #{@plan.process_limits.fetch(queue, "-")}", result(queue))
    end

    def result(queue)
      checks = checks(queue)
      return "no queue limit" if checks.empty?
      return "EXCEEDED" unless checks.all? { |seen, limit| seen <= limit }

      checks.all? { |seen, limit| seen == limit } ? "OK, reached" : "OK, not reached"
    end

    # [most seen, limit] for the queue's global limit and each process's limit.
    def checks(queue)
      global = @plan.limits.key?(queue) ? [[@snapshot.max[queue], @plan.limits[queue]]] : []
      return global unless @plan.process_limits.key?(queue)

      global + @plan.workers.map { [@snapshot.max_per_worker[_1][queue], @plan.process_limits[queue]] }
    end

    def verdict
      return problems.map { "FAILED: #{_1}" } + warnings if problems.any?

      ["All limits held and all #{@plan.total_jobs} jobs ran, each once."] + warnings
    end

    def problems
      exceeded = @plan.queues.select { result(_1) == "EXCEEDED" }
      missing = counts(@plan.queues.to_h { [_1, @plan.jobs[_1] - @snapshot.done[_1]] })
      [("limits exceeded on #{exceeded.join(", ")}" if exceeded.any?),
       ("jobs that did not run: #{missing}" unless missing.empty?), *@spotlight.problems].compact
    end

    def warnings
      return [] if @busy_slots.empty?

      ["WARNING: busy slots left in Redis after the processes stopped: #{counts(@busy_slots)}"]
    end

    # "queue count, ..." for the positive counts.
    def counts(per_queue)
      per_queue.select { |_queue, count| count.positive? }.map { |queue, count| "#{queue} #{count}" }.join(", ")
    end
  end
end
