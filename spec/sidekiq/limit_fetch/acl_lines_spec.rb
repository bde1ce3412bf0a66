# frozen_string_literal: true

require_relative "../../support/gem_redis_commands"

# README.md's Redis ACL lines, held to the commands the gem sends: those the
# code is found to send (every script's redis.call, every command the core
# builds, every command of the Ruby layer) and src/acl_commands.txt, the list
# the boot check runs. No Redis needed.
RSpec.describe "The Redis commands the gem sends" do
  commands = GemRedisCommands
  let(:used) { commands.used }
  let(:listed) { commands.listed }

  it "are all in src/acl_commands.txt" do
    missing = used.except(*listed.keys).map do |name, places|
      hint = " (name what it sends in GemRedisCommands::SIDEKIQ_API)" if name.start_with?("sidekiq api")
      "#{name} (#{places.first(3).join(", ")})#{hint}"
    end
    expect(missing).to eq([]), "sent by the code, not in src/acl_commands.txt: #{missing.join("; ")}"
  end

  it "are all still sent, save those the code sends without naming them" do
    implicit, named = listed.partition { |_, tags| tags.include?("implicit") }.map(&:to_h)
    unused = named.keys - used.keys
    expect(unused).to eq([]), "in src/acl_commands.txt, no longer sent by the code: #{unused.join(", ")}"
    expect(implicit.keys & used.keys).to eq([]), "tagged @implicit, yet named in the code"
  end

  it "are listed with known tags, and each exception says why" do
    commands.entries.each do |entry|
      expect(entry.tags - commands::TAGS).to eq([]), "line #{entry.line}: unknown tag"
      next unless entry.tags.intersect?(%w[implicit unlisted optional sentinel])

      expect(entry.comment.to_s).not_to be_empty, "line #{entry.line} (#{entry.name}): an exception, without a why"
    end
  end

  it "are exactly those README.md's gem-only ACL line allows" do
    readme = commands.readme_commands("limit_fetch")
    expect(commands.allowed - readme).to eq([]), "used by the gem, missing from README.md's `user limit_fetch` line"
    expect(readme - commands.allowed).to eq([]), "in README.md's `user limit_fetch` line, not used by the gem"
  end

  it "are all allowed by README.md's Sidekiq line" do
    missing = commands.allowed - commands.readme_commands("sidekiq")
    expect(missing).to eq([]), "missing from README.md's `user sidekiq` line"
  end

  it "each say what they are for in docs/production.md's Redis ACL table" do
    section = File.read(File.join(commands::ROOT, "docs/production.md"))[/^## Redis ACL\n.*?(?=^## )/m]
    # A cell escapes the pipe of `client\|tracking`.
    cells = section.scan(/^\| (.+?) (?<!\\)\|/).flatten
    documented = cells.flat_map { _1.scan(/`([a-z\\|]+)`/).flatten }.map { _1.delete("\\") }
    expect(commands.allowed - documented).to eq([]), "not in docs/production.md's Redis ACL table"
    expect(documented - commands.allowed).to eq([]), "in docs/production.md's Redis ACL table, not used by the gem"
  end

  it "are found in the code's own forms of sending a command" do
    expect(commands.rust_calls(<<~RUST).map(&:first)).to eq(%w[client|tracking function|load ltrim multi exec])
      redis::cmd("CLIENT")
          .arg(&["TRACKING", "ON"]);
      let mut load = redis::cmd("FUNCTION");
      load.arg("LOAD");
      pipe.cmd("LTRIM").arg(key);
      pipe.atomic();
    RUST
    lua = "redis.call('LTRIM', q, 0, -1) redis.pcall(\"GETDEL\", k)"
    expect(commands.lua_calls(lua).map(&:first)).to eq(%w[ltrim getdel])
    ruby = %(conn.call("EVAL", s, 0); pipe.call("LINDEX", k, -1); conn.llen(k); conn.call(x))
    expect(commands.ruby_calls(ruby).map(&:first)).to eq(%w[eval lindex llen])
    expect(commands.ruby_calls("Sidekiq::Queue.all.map(&:name); Sidekiq::Stats.new").map(&:first))
      .to eq(["sscan", "sidekiq api: sidekiq::stats.new"])
    rust = "cmd(\"GET\")\n#[cfg(test)]\nmod tests {\n cmd(\"FLUSHDB\")\n}"
    expect(commands.production_rust(rust)).not_to include("FLUSHDB")
  end
end
