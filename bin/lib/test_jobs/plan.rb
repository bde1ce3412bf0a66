# frozen_string_literal: true

require "json"
require "open3"

module TestJobs
  # The jobs for each SERVER:SCOPE given, longest first: the chaos spec,
  # the GC-stress run, the end-to-end specs, the other specs by size, the
  # core's test binaries.
  class Plan
    SERVERS = %w[redis valkey].freeze
    SCOPES = %w[all core].freeze
    CHAOS = "spec/integration/chaos_spec.rb"

    def initialize(argv)
      raise ArgumentError, "usage: SERVER:SCOPE... (#{SERVERS.join(", ")}; #{SCOPES.join(", ")})" if argv.empty?

      @targets = argv.map { parse(_1) }
    end

    def jobs
      binaries = test_binaries
      @targets.flat_map { |server, scope| jobs_for(server, scope, binaries) }
    end

    private

    def parse(arg)
      server, scope = arg.split(":", 2)
      raise ArgumentError, "#{arg}: SERVER one of #{SERVERS.join(", ")}" unless SERVERS.include?(server)
      raise ArgumentError, "#{arg}: SCOPE one of #{SCOPES.join(", ")}" unless SCOPES.include?(scope)

      [server, scope]
    end

    # The core's test binaries, built and listed by cargo: run directly,
    # several at once, where `cargo test` would hold cargo's lock.
    def test_binaries
      out, status = Open3.capture2("cargo", "test", "-p", "limit_fetch_core", "--no-run", "--quiet",
        "--message-format=json", chdir: ROOT)
      raise ArgumentError, "cargo test --no-run failed" unless status.success?

      out.lines.filter_map do |line|
        message = JSON.parse(line)
        message["executable"] if message["reason"] == "compiler-artifact" && message.dig("profile", "test")
      end
    end

    def jobs_for(server, scope, binaries)
      env = {"LIMIT_FETCH_SERVER" => server, "REDIS_URL" => nil, "LIMIT_FETCH_RSPEC_STATUS" => ""}
      specs = scope == "all" ? [CHAOS, *other_specs] : [CHAOS]
      rspec = specs.map { |file| Job.new("#{server}: #{file}", env, %W[bundle exec rspec #{file}]) }
      cargo = binaries.map { |path| Job.new("#{server}: core #{File.basename(path)[/\A\w+?(?=-\h+\z)/]}", env, [path]) }
      scope == "all" ? [rspec.first, stress(server, env), *rspec.drop(1), *cargo] : [*rspec, *cargo]
    end

    # Every call into the extension with GC.stress on (spec/support/gc_stress.rb),
    # loading only the files that hold such examples: each collection marks
    # a smaller heap.
    def stress(server, env)
      files = spec_files.select { File.read(File.join(ROOT, _1)).match?(/[,(]\s*:binding\b/) }
      Job.new("#{server}: rspec --tag binding, under GC stress", env.merge("LIMIT_FETCH_GC_STRESS" => "1"),
        %w[bundle exec rspec --tag binding] + files)
    end

    def other_specs
      (spec_files - [CHAOS]).sort_by do |file|
        [file.start_with?("spec/integration/") ? 0 : 1, -File.size(File.join(ROOT, file))]
      end
    end

    def spec_files = Dir.chdir(ROOT) { Dir["spec/**/*_spec.rb"] }
  end
end
