# frozen_string_literal: true

require "json"
require "open3"
require "rubygems/package"
require_relative "../support/installed_gem"
require_relative "../support/sidekiq_app"
require_relative "../support/sidekiq_processes"

# The release path without Rust: the platform gem, packaged as the release's
# cross gems are (LimitFetchTools::PlatformGem) from the extension `rake
# compile` built for this suite (no second build), installed where cargo and
# rustc cannot run, and a real `sidekiq` process running limited jobs from it.
# And what the source gem (`gem build`) holds. `rspec --tag gem` runs these.
RSpec.describe "the gems", :gem do
  include SidekiqProcesses

  root = SidekiqApp::REPO_ROOT
  gemspec = Gem::Specification.load(File.join(root, "sidekiq-limit_fetch-rs.gemspec"))

  # The files in git that the gem needs to compile and run its extension.
  let(:needed_sources) do
    output, status = Open3.capture2e("git", "-C", root, "ls-files", "lib", "web", "src", "ext", "exe",
      "Cargo.toml", "Cargo.lock", "README.md", "LICENSE")
    raise "git ls-files failed: #{output}" unless status.success?

    output.lines(chomp: true).reject { |path| path == "src/README.md" || path.end_with?("/tests.rs") }
  end

  def gem_files(gem_path)
    Gem::Package.new(gem_path).contents
  end

  before(:context) { @work = Dir.mktmpdir("gems") }
  after(:context) { FileUtils.rm_rf(@work) }

  it "builds a source gem of what compiles and runs the extension, nothing else" do
    output, status = LimitFetchTools.unbundled do
      Open3.capture2e("gem", "build", "sidekiq-limit_fetch-rs.gemspec", "--output", File.join(@work, "source.gem"),
        chdir: root)
    end
    expect(status).to be_success, output

    files = gem_files(File.join(@work, "source.gem"))
    expect(files).to match_array(needed_sources)
    expect(files.grep(%r{\A(spec|bench|chaos|demo|tools|tests|tmp|target|docs|pkg)/|results})).to eq([])
    expect(Gem::Package.new(File.join(@work, "source.gem")).spec.extensions)
      .to eq(["ext/limit_fetch_native/extconf.rb"])
  end

  context "with the platform gem installed where cargo and rustc cannot run", :e2e do
    before(:context) do
      binary = File.join(root, "lib/sidekiq/limit_fetch/limit_fetch_native.#{RbConfig::CONFIG["DLEXT"]}")
      raise "#{binary} is missing: run `bundle exec rake compile` first" unless File.exist?(binary)

      @gem_path = LimitFetchTools::PlatformGem.build(gemspec, root: root, binary: binary, out_dir: @work)
      @installed = InstalledGem.new
    end
    after(:context) { @installed&.remove }

    let(:installed) { @installed }

    after do |example|
      warn "---- #{@process.name} (last 40 lines)\n#{@process.log_tail}" if example.exception && @process
      @process&.kill!
    end

    it "holds the binary at the versioned path and none of the sources" do
      spec = Gem::Package.new(@gem_path).spec
      expect(spec.platform).to eq(Gem::Platform.local)
      expect(spec.extensions).to eq([])
      expect(spec.dependencies.map(&:name)).to contain_exactly("sidekiq")
      binary_path = LimitFetchTools::PlatformGem.binary_path
      expect(binary_path).to eq("lib/sidekiq/limit_fetch/#{RUBY_VERSION[/\d+\.\d+/]}/limit_fetch_native.so")
      expect(gem_files(@gem_path))
        .to match_array(needed_sources.grep_v(%r{\A(src|ext)/|\ACargo\.}) + [binary_path])
    end

    it "installs without calling cargo or rustc, and a sidekiq process runs limited jobs from it" do
      output, status = installed.run("cargo", "--version")
      expect(status).not_to be_success, "cargo ran on the install's PATH: #{output}"
      expect(installed.tool_calls).to eq(["cargo --version"])
      installed.clear_tool_calls

      installed.install(@gem_path)
      @process = installed.spawn("gem_user", redis_url: RedisServer.url, concurrency: 5, queues: %w[gemq],
        limits: {"gemq" => 2})
      await_registration([@process], [])
      jids = push_jobs("gemq", 10, seconds: 0.2)
      wait_for_done(jids, timeout: 30)
      stop_process(@process)

      expect(max_running("gemq")).to eq(2)
      loaded = JSON.parse(redis.call("GET", "lf_test:loaded"))
      gem_dir = File.join(installed.gem_home, "gems", File.basename(@gem_path, ".gem"))
      expect(loaded["gem_dir"]).to eq(gem_dir)
      expect(loaded["platform"]).to eq(Gem::Platform.local.to_s)
      features = loaded["features"]
      expect(features.grep(/limit_fetch_native/))
        .to eq([File.join(gem_dir, LimitFetchTools::PlatformGem.binary_path)])
      gem_features = features.select do |path|
        path.include?("/sidekiq/limit_fetch") || path.end_with?("/sidekiq-limit_fetch.rb")
      end
      expect(gem_features.size).to be > 30
      expect(gem_features).to all(start_with("#{gem_dir}/lib/"))
      expect(features.grep(%r{\A#{Regexp.escape(root)}/lib/})).to eq([])
      expect(installed.tool_calls).to eq([])
    end
  end
end
