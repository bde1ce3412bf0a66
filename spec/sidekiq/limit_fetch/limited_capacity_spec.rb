# frozen_string_literal: true

require_relative "../../support/capacity_job"

# LimitedCapacity with real Sidekiq: embedded instances, each standing for
# one process, drain a backlog kept in Redis; the work items record, from
# inside, the most that ran at once.
RSpec.describe Sidekiq::LimitFetch::LimitedCapacity do
  let(:job_class) { LimitFetchSpec::CapacityJob }
  let(:label) { LimitFetchSpec::CapacityJob::LABEL }
  let(:job_limit) { Sidekiq::LimitFetch::JobLimit.for(job_class) }

  after { job_class.max = 2 }

  def start_processes(count, concurrency: 3)
    count.times { start_embedded(build_config(queues: [job_class::QUEUE], concurrency: concurrency)) }
  end

  def expect_no_job_left
    wait_until(message: -> { "no job running or parked: #{job_limit.to_h}" }) do
      job_limit.running.zero? && job_limit.parked.zero?
    end
    expect(queue_length(job_class::QUEUE)).to eq(0)
    expect(job_class.new.remaining_work_count).to eq(0)
  end

  it "drains the backlog at max_running_jobs, never more, from one call, and leaves no job behind" do
    items = Array.new(24) { |i| "item-#{i}" }
    job_class.add_work(*items)
    start_processes(2)

    expect(job_class.perform_with_capacity(0.03).size).to eq(2)

    wait_for_done(items)
    expect(max_running(label)).to eq(2)
    expect_no_job_left
  end

  it "pushes only the free slots, counting running jobs, and what a limit set at run time frees" do
    items = %w[a b c d]
    job_class.add_work(*items)
    start_processes(1, concurrency: 4)
    expect(job_class.perform_with_capacity(10, "hold").size).to eq(2)
    wait_until(message: -> { "2 running: #{job_limit.to_h}" }) { running(label) == 2 }

    expect(job_class.perform_with_capacity(10, "hold")).to eq([])
    job_limit.limit = 3
    expect(job_class.perform_with_capacity(10, "hold").size).to eq(1)
    wait_until(message: -> { "3 running: #{job_limit.to_h}" }) { running(label) == 3 }
    open_gate("hold")

    wait_for_done(items)
    expect(max_running(label)).to eq(3)
    expect_no_job_left
  ensure
    job_limit.reset
  end

  it "shrinks back to max_running_jobs after two calls pushed twice as many jobs" do
    items = Array.new(12) { |i| "item-#{i}" }
    job_class.add_work(*items)
    # Nothing fetches yet: neither call sees the other's jobs.
    pushed = Array.new(2) { job_class.perform_with_capacity(0.03) }.sum(&:size)
    expect(pushed).to eq(4)
    start_processes(1, concurrency: 4)

    wait_for_done(items)
    expect(max_running(label)).to eq(2)
    expect_no_job_left
  end

  it "pushes no job after one that raised; the next call takes its place" do
    job_class.max = 1
    job_class.add_work("boom", "after")
    start_processes(1)
    job_class.perform_with_capacity(0.01)
    wait_until(message: "the first job to take its work") { job_class.new.remaining_work_count == 1 }

    held = holds_for?(0.5) { job_class.new.remaining_work_count == 1 }
    expect(held).to be(true)
    expect(queue_length(job_class::QUEUE) + job_limit.running + job_limit.parked).to eq(0)

    job_class.perform_with_capacity(0.01)
    wait_for_done(["after"])
    expect_no_job_left
  end

  it "carries max_running_jobs as its class limit, read at each push" do
    job_class.max = 5
    job_class.perform_async(0)
    job_class.max = 1
    job_class.perform_async(0)

    limits = redis.call("LRANGE", "queue:#{job_class::QUEUE}", 0, -1).reverse.map { JSON.parse(_1)["limit_fetch"] }
    expect(limits).to eq([5, 1].map { [{"id" => "class:LimitFetchSpec::CapacityJob", "concurrency" => _1}] })
    expect(job_limit.limit).to eq(1)
  end

  it "gives a subclass a class limit of its own, from its own max_running_jobs" do
    subclass = stub_const("SubCapacityJob", Class.new(job_class) { def max_running_jobs = 7 })
    subclass.perform_async(0)

    expect(JSON.parse(redis.call("LINDEX", "queue:#{job_class::QUEUE}", 0))["limit_fetch"])
      .to eq([{"id" => "class:SubCapacityJob", "concurrency" => 7}])
    expect(Sidekiq::LimitFetch::JobLimit.for(subclass).limit).to eq(7)
    expect(job_limit.limit).to eq(2)
  end

  describe "bad declarations" do
    def capacity_class(&body)
      stub_const("BadCapacityJob", Class.new { include Sidekiq::LimitFetch::LimitedCapacity })
        .tap { |klass| klass.class_eval(&body) }
    end

    it "names the methods the class does not define" do
      klass = capacity_class { def perform_work = nil }

      expect { klass.perform_with_capacity }
        .to raise_error(ArgumentError, "sidekiq-limit_fetch: BadCapacityJob includes LimitedCapacity but " \
                                       "does not define remaining_work_count, max_running_jobs")
      expect { klass.perform_async }.to raise_error(ArgumentError, /BadCapacityJob.*max_running_jobs/)
      expect(queue_length("default")).to eq(0)
    end

    it "refuses a perform of its own, which would push no next job" do
      klass = capacity_class do
        def perform = nil
        def perform_work = nil
        def remaining_work_count = 1
        def max_running_jobs = 2
      end

      expect { klass.perform_with_capacity }
        .to raise_error(ArgumentError, /BadCapacityJob.*define perform_work instead/)
    end

    it "refuses a max_running_jobs that is not an Integer from 0 up" do
      [-1, "2", nil].each do |value|
        klass = capacity_class do
          define_method(:max_running_jobs) { value }
          def perform_work = nil
          def remaining_work_count = 1
        end

        expect { klass.perform_with_capacity }.to raise_error(ArgumentError,
          /BadCapacityJob#max_running_jobs must return an Integer .*got #{Regexp.escape(value.inspect)}\z/)
        expect { klass.perform_async }.to raise_error(ArgumentError, /BadCapacityJob#max_running_jobs/)
      end
      expect(queue_length("default")).to eq(0)
    end

    it "refuses a limit_fetch option of its own, which would replace max_running_jobs" do
      klass = capacity_class do
        sidekiq_options limit_fetch: {concurrency: 9}
        def perform_work = nil
        def remaining_work_count = 1
        def max_running_jobs = 2
      end

      expect { klass.perform_with_capacity }.to raise_error(ArgumentError, /BadCapacityJob.*remove its limit_fetch/)
    end
  end
end
