# frozen_string_literal: true

module LimitFetchChaos
  # Pushes the jobs, ChaosJob.perform(queue, millis), and on the queues of
  # the classes with job limits (LIMITED) one of them (the queue's, chosen
  # at random) with perform(queue, millis, tenant) for a random tenant of
  # its own: keeps BACKLOG (Plan#backlog) jobs waiting in each queue (counting the jobs
  # parked at their job limits and rates), so that every thread is busy, the
  # limited queues stay at their limits and jobs are parked (or, on queue d,
  # discarded), until every queue had its share of --jobs (the rated
  # classes' queues have none: they are fed as long as the others are) or
  # --duration is over; r, o and l in turns (Plan#feeds?).
  #
  # The LIMITED classes are pushed by class, so that the gem's client
  # middleware computes the limits their jobs carry; Carried counts the
  # pushes whose payload then has them.
  class Feeder
    BACKLOG = 50

    # Client middleware, after the gem's: tallies the LIMITED classes'
    # payloads by class and whether they carry their job limits
    # ("limit_fetch"), and keeps one of each class.
    class Carried
      include Sidekiq::ClientMiddleware

      def initialize(tally)
        @tally = tally
      end

      def call(_job_class, job, _queue, _redis_pool)
        tally = @tally[job["class"].to_s]
        if tally
          limits = job[Sidekiq::LimitFetch::ClientMiddleware::FIELD]
          tally[limits.is_a?(Array) && limits.any? ? :carried : :not_carried] += 1
          tally[:sample] ||= limits
        end
        yield
      end
    end

    # The parked lists of the job limits (and rates) of each queue's jobs.
    PARKED = [*WatchedLimit.parking, *RatedLimit.all]
             .flat_map { |limit| limit.queues.product([limit.parked_key]) }
             .group_by(&:first).transform_values { |pairs| pairs.map(&:last) }.freeze

    PACED = GroupedChaosJob::QUEUES

    # jid => tenant of every job of the LIMITED classes.
    attr_reader :jids, :tenants
    # The FAIR classes' pushes (FairShares::Pushes).
    attr_reader :fair_pushes

    def initialize(plan, sidekiq)
      @plan = plan
      @sidekiq = sidekiq
      @carried = LIMITED.to_h { [_1.name, {carried: 0, not_carried: 0, sample: nil}] }
      install_middleware
      @client = Sidekiq::Client.new(config: sidekiq)
      @pushed = Hash.new(0)
      @jids = []
      @limited = LIMITED.to_h { [_1.name, []] }
      @tenants = {}
      @parked = {most: 0, ticks: 0, ticks_parked: 0, queues: PARKED.keys.to_h { [_1, 0] }}
    end

    # Pushes while the run feeds; samples what is parked until it ends (a
    # queue late in the strict order, e, may be served only once the pushes
    # are done).
    def feed(elapsed)
      queued, parked = waiting
      note(parked)
      return if done?(elapsed)

      queues.zip(queued).each do |queue, count|
        next unless @plan.feeds?(queue, elapsed)

        push(queue, [@plan.backlog(queue) - count - parked[queue], left(queue), paced(queue)].compact.min)
      end
    end

    # How far the pushes are, from 0 to 1, by the queue furthest behind its
    # quota (but PACED): the run ends once that queue's jobs are done, so
    # this follows the run's time better than the share of jobs completed
    # (the fast queues' jobs are done early). nil without --jobs.
    def pace
      (queues - PACED).filter_map { |queue| @plan.quota(queue)&.then { @pushed[queue].fdiv([_1, 1].max) } }.min
    end

    # --duration is over, or every queue with a share of --jobs had it.
    def done?(elapsed)
      over = @plan.options.duration && elapsed >= @plan.options.duration
      shares = queues.filter_map { left(_1) }
      over || (shares.any? && shares.all?(&:zero?))
    end

    # How many jobs a parked list held at the last tick.
    def parked_now(key) = @parked_now&.fetch(key, 0) || 0

    # The LIMITED classes' jids, by class.
    def limited_jids = @limited

    # Per LIMITED class, its pushes by whether their payload carried the job
    # limits, and one payload's limits (sample); how many jobs were parked at
    # most, in how many of the feeder's ticks any were, and in how many some
    # of each queue's were.
    def limited_h
      {classes: @carried, parked_most: @parked[:most], ticks_parked: @parked[:ticks_parked], ticks: @parked[:ticks],
       ticks_parked_by_queue: @parked[:queues]}
    end

    private

    def queues = @plan.queues

    # The gem's client middleware, as it installs it in Sidekiq's own
    # configuration (the driver's is one of its own), then Carried and
    # FairShares::Pushes.
    def install_middleware
      @fair_pushes = FAIR.to_h { [_1.name, {}] }
      @sidekiq.client_middleware do |chain|
        chain.add(Sidekiq::LimitFetch::ClientMiddleware)
        chain.add(Carried, @carried)
        chain.add(FairShares::Pushes, @fair_pushes)
      end
    end

    # Each queue's length, and how many of its jobs are parked (queue => count).
    def waiting
      replies = @sidekiq.redis { |conn| conn.pipelined { |pipe| lists.each { pipe.call("LLEN", _1) } } }
      queued, counts = replies.partition.with_index { |_, i| i < queues.size }
      @parked_now = PARKED.values.flatten.zip(counts).to_h
      [queued, by_queue(counts)]
    end

    # Parked jobs per queue, from the parked lists' lengths.
    def by_queue(counts) = PARKED.transform_values { counts.shift(_1.size).sum }.tap { _1.default = 0 }

    # The queues, then the parked lists.
    def lists = [*queues.map { "queue:#{_1}" }, *PARKED.values.flatten]

    def note(parked)
      total = parked.values.sum
      @parked[:ticks] += 1
      @parked[:ticks_parked] += 1 if total.positive?
      @parked[:most] = [@parked[:most], total].max
      parked.each { |queue, count| @parked[:queues][queue] += 1 if count.positive? }
    end

    # With --jobs, the tuned key's queue (PACED) gets its share at the
    # other queues' pace, BACKLOG ahead, so that its jobs run throughout the
    # limit's changes (else they would all be done within seconds); nil: no
    # cap. It cannot stall the run: the other queues' pushes do not wait for
    # it.
    def paced(queue)
      quota = @plan.quota(queue)
      (quota * pace).ceil + @plan.backlog - @pushed[queue] if quota && PACED.include?(queue)
    end

    # Jobs the queue has still to get; nil: no quota.
    def left(queue)
      quota = @plan.quota(queue)
      quota && (quota - @pushed[queue])
    end

    def push(queue, count)
      return unless count.positive?

      classes = LIMITED.select { _1::QUEUES.include?(queue) }
      @jids.concat(classes.empty? ? push_plain(queue, count) : push_limited(queue, classes, count))
      @pushed[queue] += count
    end

    def push_plain(queue, count)
      args = Array.new(count) { [queue, @plan.job_millis] }
      @client.push_bulk("class" => "ChaosJob", "queue" => queue, "args" => args)
    end

    # [class, args] of a job for a random tenant.
    def limited_job(queue, job_class)
      tenant = @plan.tenant(job_class)
      [job_class, [queue, @plan.job_millis(tenant, job_class), tenant]]
    end

    def push_limited(queue, classes, count)
      jobs = Array.new(count) { limited_job(queue, @plan.pick(classes)) }
      jobs.group_by(&:first).flat_map do |job_class, pushes|
        args = pushes.map(&:last)
        jids = @client.push_bulk("class" => job_class, "queue" => queue, "args" => args)
        @limited[job_class.name].concat(jids)
        jids.zip(args) { |jid, (_, _, tenant)| @tenants[jid] = tenant }
        jids
      end
    end
  end
end
