# frozen_string_literal: true

require "fileutils"
require "open3"
require "tmpdir"

# bin/sandbox on a machine without debootstrap: it installs it with apt-get,
# saying so, or says what to install. Run here with a PATH that hides
# debootstrap and apt-get, stand-ins for them, and a cache of its own, so
# that nothing is installed and no root is built: the stand-in debootstrap
# records its call and fails.
RSpec.describe "bin/sandbox without debootstrap", :sandbox do
  let(:root) { File.expand_path("../..", __dir__) }

  before { skip "bin/sandbox runs as root only" unless Process.uid.zero? }

  around do |example|
    Dir.mktmpdir("sandbox_bootstrap") do |dir|
      @dir = dir
      example.run
    end
  end

  # A PATH directory of links to every command but debootstrap and apt-get,
  # and one for the stand-ins.
  def path_without_debootstrap
    hidden = File.join(@dir, "hidden")
    FileUtils.mkdir_p([hidden, stand_ins])
    %w[/usr/local/bin /usr/sbin /usr/bin /sbin /bin].each do |dir|
      Dir.each_child(dir) do |name|
        next if %w[debootstrap apt-get].include?(name) || File.exist?(File.join(hidden, name))

        File.symlink(File.join(dir, name), File.join(hidden, name))
      rescue Errno::ENOENT
        next
      end
    end
    "#{stand_ins}:#{hidden}"
  end

  def stand_ins = File.join(@dir, "stand_ins")

  def calls_log = File.join(@dir, "calls.log")

  def calls = File.exist?(calls_log) ? File.readlines(calls_log, chomp: true) : []

  def stand_in(name, body)
    File.write(File.join(stand_ins, name), "#!/bin/sh\necho \"#{name} $*\" >> #{calls_log}\n#{body}\n")
    File.chmod(0o755, File.join(stand_ins, name))
  end

  def sandbox(path)
    env = {"PATH" => path, "SANDBOX_CACHE" => File.join(@dir, "cache"), "LIMIT_FETCH_SANDBOX" => nil}
    Open3.capture3(env, File.join(root, "bin/sandbox"), "true", chdir: root)
  end

  it "installs debootstrap with apt-get, saying so, then builds the root with it" do
    path = path_without_debootstrap
    failing_debootstrap = "printf '#!/bin/sh\\necho \"debootstrap $*\" >> #{calls_log}\\nexit 1\\n' " \
                          "> #{stand_ins}/debootstrap; chmod +x #{stand_ins}/debootstrap"
    stand_in("apt-get", "[ \"$1\" = install ] && { #{failing_debootstrap}; }; exit 0")

    _, err, status = sandbox(path)

    expect(err).to include("bin/sandbox: 'debootstrap' not found: installing it with apt-get")
    expect(calls.first(2)).to eq(["apt-get update -q", "apt-get install -y -q debootstrap"])
    expect(calls.drop(2)).to all(start_with("debootstrap --variant=minbase"))
    expect(calls.size).to eq(4) # debootstrap tried twice
    expect(err).to include("debootstrap failed twice")
    expect(status.exitstatus).to eq(1)
  end

  it "says what went wrong when apt-get cannot install it" do
    path = path_without_debootstrap
    stand_in("apt-get", "echo 'E: Unable to locate package debootstrap' >&2; exit 100")

    _, err, status = sandbox(path)

    expect(status.exitstatus).to eq(1)
    expect(err).to include("E: Unable to locate package debootstrap")
    expect(err).to include("bin/sandbox: apt-get could not install debootstrap (log: #{@dir}/cache/apt-get.log)")
  end

  it "says what to install where there is no apt-get" do
    _, err, status = sandbox(path_without_debootstrap)

    expect(status.exitstatus).to eq(1)
    expect(err).to include("bin/sandbox: 'debootstrap' not found, and no apt-get to install it with: " \
                           "install debootstrap")
    expect(calls).to eq([])
  end
end
