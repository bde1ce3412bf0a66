# frozen_string_literal: true

module LimitFetchDemo
  # The live per-queue view. On a terminal it redraws a table in place; else
  # (CI, a pipe) it prints one line a second.
  class View
    LINE_INTERVAL = 1.0
    COLUMNS = Columns.new(-11, 13, 17, 7, 6, 8, -1)
    HEADER = COLUMNS.line("queue", "running/limit", "per process/limit", "queued", "done", "max seen")

    def initialize(plan, out: $stdout)
      @plan = plan
      @out = out
      @tty = out.tty?
      @drawn = 0
      @printed_at = nil
      @out.print("\e[?25l") if @tty # hides the cursor
      @out.puts("Each second, per queue: running now/limit (queued, done)") unless @tty
    end

    # `now`: a Spotlight::Now.
    def update(snapshot, now, elapsed)
      if @tty
        draw(table(snapshot, elapsed) + ["", *spotlight(now)])
      elsif @printed_at.nil? || elapsed - @printed_at >= LINE_INTERVAL
        @printed_at = elapsed
        @out.puts(line(snapshot, elapsed), *spotlight(now).map { "        #{_1}" })
      end
    end

    # Shows the last state, however soon after the one before.
    def finish(snapshot, now, elapsed)
      @printed_at = nil
      update(snapshot, now, elapsed)
      close
    end

    def close
      @out.print("\e[?25h") if @tty && !@closed # shows the cursor again
      @closed = true
    end

    private

    def draw(lines)
      @out.print("\e[#{@drawn}A") if @drawn.positive? # back to the top of the previous table
      lines.each { @out.print("#{_1}\e[K\n") }
      @out.print("\e[J")
      @out.flush
      @drawn = lines.size
    end

    def table(snapshot, elapsed)
      ["#{@plan.describe}: #{elapsed.round(1)} s", "", HEADER] +
        @plan.queues.map { row(snapshot, _1) } +
        [COLUMNS.line("all", snapshot.total(:running), "", snapshot.total(:queued), snapshot.total(:done))]
    end

    def row(snapshot, queue)
      running = snapshot.running[queue]
      COLUMNS.line(queue, "#{running} / #{limit(queue)}", per_process(snapshot, queue),
        snapshot.queued[queue], snapshot.done[queue], snapshot.max[queue], bar(running, queue))
    end

    def per_process(snapshot, queue)
      "#{@plan.workers.map { snapshot.running_per_worker[_1][queue] }.join(" + ")} / #{process_limit(queue)}"
    end

    # A block per running job, then a dot per free slot up to the limit.
    def bar(running, queue)
      "#{"█" * running}#{"·" * [@plan.limits.fetch(queue, 0) - running, 0].max}"
    end

    # The hot tenant and the rate, now.
    def spotlight(now)
      ["hot tenant #{Plan::HOT_TENANT}: #{now.hot_running} running / limit #{TenantJob::CONCURRENCY}, " \
       "#{now.hot_parked} parked (most #{now.most_hot_parked})   other tenants' jobs started: " \
       "#{now.others_started} of #{@plan.other_tenants.size} tenants",
       "partner_api (RatedJob, rate #{RatedJob::RATE[:limit]}/#{RatedJob::RATE[:period]} s): " \
       "#{now.rated_recent} starts in the last #{RatedJob::RATE[:period]} s, #{now.rated_parked} parked"]
    end

    def line(snapshot, elapsed)
      queues = @plan.queues.map do |queue|
        "#{queue} #{snapshot.running[queue]}/#{limit(queue)} " \
          "(#{snapshot.queued[queue]}, #{snapshot.done[queue]})"
      end
      "#{elapsed.round(1).to_s.rjust(5)} s  #{queues.join(" | ")}"
    end

    def limit(queue) = @plan.limits.fetch(queue, "-")

    def process_limit(queue) = @plan.process_limits.fetch(queue, "-")
  end
end
