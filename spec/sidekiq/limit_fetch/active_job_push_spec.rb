# frozen_string_literal: true

# perform_later on Sidekiq's adapter, in this process (which loads the gem and
# the Rails 7.2 app of spec/fixtures/rails_app): a GlobalID argument's record
# is located (its class's find) only when a key callable needs the job's
# arguments.
RSpec.describe Sidekiq::LimitFetch::ClientMiddleware, "with ActiveJob arguments" do
  before(:context) do
    require File.expand_path("../../fixtures/rails_app/config/environment", __dir__)
  end

  # A record GlobalID locates with find, which counts its calls; the records
  # live in this process, a table of their own.
  let(:record_class) do
    klass = Class.new do
      include GlobalID::Identification

      class << self
        attr_accessor :finds, :rows

        def find(id)
          self.finds += 1
          rows.fetch(id) { raise KeyError, "no #{name} #{id}" }
        end
      end

      attr_reader :id

      def initialize(id)
        @id = id
      end

      def destroy = self.class.rows.delete(id)
    end
    klass.finds = 0
    klass.rows = {}
    stub_const("CountedRecord", klass)
  end

  def create_record(id) = record_class.rows[id] = record_class.new(id)

  def job_class(name, options)
    stub_const(name, Class.new(ApplicationJob) { sidekiq_options limit_fetch: options })
  end

  def limits_by_job_id
    redis.call("LRANGE", "queue:rails", 0, -1).to_h do |job|
      job = JSON.parse(job)
      [job["args"].first["job_id"], job["limit_fetch"]]
    end
  end

  it "locates no record for a class limit" do
    job = job_class("InvoiceJob", concurrency: 2).perform_later(create_record("7"))

    expect(record_class.finds).to eq(0)
    expect(limits_by_job_id).to eq(job.job_id => [{"id" => "class:InvoiceJob", "concurrency" => 2}])
  end

  it "pushes a job of a class limit whose record was deleted, as Sidekiq alone would" do
    record = create_record("7")
    record.destroy
    job = job_class("InvoiceJob", concurrency: 2).perform_later(record)

    expect(limits_by_job_id).to eq(job.job_id => [{"id" => "class:InvoiceJob", "concurrency" => 2}])
  end

  it "locates the records for a key callable, which gets them" do
    keyed_job = job_class("KeyedInvoiceJob", key: ->(invoice) { "invoice-#{invoice.id}" })
    job = keyed_job.perform_later(create_record("8"))

    expect(record_class.finds).to eq(1)
    expect(limits_by_job_id).to eq(job.job_id => [{"id" => "key:KeyedInvoiceJob#invoice-8", "concurrency" => 1}])
  end
end
