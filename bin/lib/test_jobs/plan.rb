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
    # The core's test binaries of what rates touch, run again in data
    # format 2 (tests/support's LIMIT_FETCH_TEST_FORMAT), where a rate of
    # 64 starts or fewer keeps its window as a string
    # (src/lua/prelude/rate_shapes.lua).
    FORMAT_TWO = %w[rates rate_costs rate_leases rate_openings first_read denied_midway job_limits
                    keyed_hand_over release_all hand_over hand_over_job_limits back_off fair_share].freeze

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
      cargo = binaries.map { |path| Job.new("#{server}: core #{binary_name(path)}", env, [path]) }
      return [*rspec, *cargo] unless scope == "all"

      [rspec.first, stress(server, env), *rspec.drop(1), *cargo, *in_format_two(server, env, binaries)]
    end

    def binary_name(path) = File.basename(path)[/\A\w+?(?=-\h+\z)/]

    def in_format_two(server, env, binaries)
      binaries.select { FORMAT_TWO.include?(binary_name(_1)) }.map do |path|
        Job.new("#{server}: core #{binary_name(path)}, format 2", env.merge("LIMIT_FETCH_TEST_FORMAT" => "2"), [path])
      end
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
