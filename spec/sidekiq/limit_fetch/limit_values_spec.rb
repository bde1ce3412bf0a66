# frozen_string_literal: true

# Every reader of a stored limit agrees on the table of values in
# spec/fixtures/limit_values.json: Ruby's (boot validation, QueueSemaphore's
# setters, the heartbeat's warnings) and, through the gem, the core's
# (QueueSemaphore#limit) and the fetch script's (retrieve_work).
# tests/limit_values.rs holds the core and the script to the same table
# without Ruby, pinning exact values through the fetch.
RSpec.describe "A stored limit value" do
  values = JSON.parse(File.read(File.expand_path("../../fixtures/limit_values.json", __dir__))).fetch("values")
  limits = Sidekiq::LimitFetch::Limits

  # What Limits.coerce makes of a value: the limit, or :refused.
  def coerced(value)
    Sidekiq::LimitFetch::Limits.coerce("q", value)
  rescue ArgumentError => e
    e.message.include?(value.inspect) ? :refused : "refused without naming the value: #{e.message}"
  end

  it "is read by Ruby as the table says: valid ones accepted as their value, broken ones refused" do
    mismatches = values.filter_map do |raw, reads_as|
      got = {parse: limits.parse(raw), coerce: coerced(raw)}
      expected = {parse: reads_as, coerce: reads_as || :refused}
      # The same number as an Integer (a YAML limit, `queue.limit = n`).
      if raw.match?(/\A[0-9]+\z/)
        got[:integer] = coerced(Integer(raw, 10))
        expected[:integer] = reads_as || :refused
      end
      "#{raw.inspect}: #{got}, expected #{expected}" unless got == expected
    end

    expect(mismatches).to eq([])
  end

  it "is read by the core, the fetch script and the heartbeat's warnings as the table says" do
    queues = values.each_index.flat_map { |i| ["limit#{i}", "process#{i}"] }
    capsule = build_capsule(queues: queues)
    fetcher = fetcher_for(capsule)
    values.each_with_index do |(raw, _), i|
      redis.call("SET", queue_key("limit#{i}", "limit"), raw)
      redis.call("SET", queue_key("process#{i}", "process_limit"), raw)
      push_jobs("limit#{i}")
      push_jobs("process#{i}")
    end

    Sidekiq::LimitFetch.client(capsule).beat
    # "... of queue <name> (<key>) is <value>, not a non-negative integer ..."
    warned = spec_log.string.lines.grep(/WARN.*not a non-negative integer/).map { |line| line[/ \((\S+)\) is /, 1] }
    taken = []
    while (work = fetcher.retrieve_work)
      taken << work.queue_name
    end

    mismatches = values.each_with_index.flat_map do |(raw, reads_as), i|
      [["limit#{i}", :limit], ["process#{i}", :process_limit]].filter_map do |queue, kind|
        semaphore = Sidekiq::LimitFetch::Global::QueueSemaphore.new(capsule, queue)
        got = {
          read: semaphore.public_send(kind),
          warned: warned.include?(queue_key(queue, kind)),
          fetched: taken.include?(queue)
        }
        expected = {read: reads_as || 0, warned: reads_as.nil?, fetched: reads_as.to_i.positive?}
        "#{kind} #{raw.inspect}: #{got}, expected #{expected}" unless got == expected
      end
    end

    expect(mismatches).to eq([])
  end
end
