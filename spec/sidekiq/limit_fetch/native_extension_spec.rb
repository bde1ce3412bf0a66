# frozen_string_literal: true

require "fileutils"
require "open3"
require "tmpdir"

# Which binary the gem loads, in a fresh Ruby each time: a copy of lib/ with
# the extension this suite compiled placed where a platform gem (versioned)
# or a source gem (plain) puts it. `rspec --tag gem` runs these.
RSpec.describe Sidekiq::LimitFetch::NativeExtension, :gem do
  root = File.expand_path("../../..", __dir__)
  binary = File.join(root, "lib/sidekiq/limit_fetch/limit_fetch_native.#{RbConfig::CONFIG["DLEXT"]}")
  minor = RUBY_VERSION[/\A\d+\.\d+/]
  name = File.basename(binary)

  # Requires the gem from a copy of lib/ holding +files+ (path under
  # lib/sidekiq/limit_fetch => :binary, or text for a file that is no
  # binary); [loaded extension paths relative to the copy, stderr, status].
  def load_copy(files, root, binary)
    Dir.mktmpdir("native_extension") do |dir|
      FileUtils.cp_r(File.join(root, "lib"), dir)
      FileUtils.rm_f(Dir[File.join(dir, "lib/sidekiq/limit_fetch/**/*.{so,bundle}")])
      files.each do |path, content|
        target = File.join(dir, "lib/sidekiq/limit_fetch", path)
        FileUtils.mkdir_p(File.dirname(target))
        content == :binary ? FileUtils.cp(binary, target) : File.write(target, content)
      end
      script = 'require "sidekiq-limit_fetch"; puts $LOADED_FEATURES.grep(/limit_fetch_native/)'
      out, err, status = LimitFetchTools.unbundled do
        Open3.capture3(Gem.ruby, "-I", File.join(dir, "lib"), "-e", script)
      end
      [out.lines(chomp: true).map { |path| path.delete_prefix("#{dir}/") }, err, status]
    end
  end

  it "loads the binary for this Ruby's minor version first" do
    loaded, err, status = load_copy({"#{minor}/#{name}" => :binary, name => :binary}, root, binary)
    expect(status).to be_success, err
    expect(loaded).to eq(["lib/sidekiq/limit_fetch/#{minor}/#{name}"])
  end

  it "falls back to the plain path when no binary is there for this Ruby, or its binary does not load" do
    loaded, err, status = load_copy({"9.9/#{name}" => :binary, name => :binary}, root, binary)
    expect(status).to be_success, err
    expect(loaded).to eq(["lib/sidekiq/limit_fetch/#{name}"])

    loaded, err, status = load_copy({"#{minor}/#{name}" => "not a shared object", name => :binary}, root, binary)
    expect(status).to be_success, err
    expect(loaded).to eq(["lib/sidekiq/limit_fetch/#{name}"])
  end

  it "loads after Sidekiq's fetch alone: the loader requires what the binary looks up as it loads" do
    script = 'require "sidekiq"; require "sidekiq/fetch"; require "sidekiq/limit_fetch/native_extension"; ' \
             "Sidekiq::LimitFetch::NativeExtension.load; puts Sidekiq::LimitFetch::Keys::PREFIX"
    out, err, status = LimitFetchTools.unbundled do
      Open3.capture3(Gem.ruby, "-I", File.join(root, "lib"), "-e", script)
    end
    expect(status).to be_success, err
    expect(out).to eq("sidekiq:limit_fetch:\n")
  end

  it "says why neither loaded and what to do" do
    loaded, err, status = load_copy({"#{minor}/#{name}" => "not a shared object"}, root, binary)
    expect(status).not_to be_success
    expect(loaded).to eq([])
    expect(err).to include("sidekiq-limit_fetch-rs: no native extension loads for Ruby #{RUBY_VERSION}")
    expect(err).to match(%r{sidekiq/limit_fetch/#{minor}/limit_fetch_native: .*(invalid ELF header|too short)})
    expect(err).to include("sidekiq/limit_fetch/limit_fetch_native: cannot load such file")
    expect(err).to include("cargo, rustc, a C compiler", "force_ruby_platform true",
      "gem install sidekiq-limit_fetch-rs --platform ruby", "bundle exec rake compile")
  end
end
