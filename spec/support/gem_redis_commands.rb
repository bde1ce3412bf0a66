# frozen_string_literal: true

# The Redis commands the gem sends: as src/acl_commands.txt lists them, and as
# the code is found to send them. The README's ACL lines and the boot check
# (src/acl.rs) rest on that list; acl_lines_spec.rb holds the three together.
module GemRedisCommands
  ROOT = File.expand_path("../..", __dir__)
  LIST = File.join(ROOT, "src/acl_commands.txt")
  TAGS = %w[optional sentinel select implicit unlisted].freeze

  # Commands whose first argument is a subcommand, which ACL rules name
  # (`client|tracking`).
  CONTAINERS = %w[client function script config acl object memory command].freeze

  # Methods of a Sidekiq or redis-client connection that are not commands
  # (any other method called on a connection is one: Sidekiq's adapter sends
  # unknown methods as commands).
  CONNECTION_METHODS = %w[call call_v pipelined config with close id then tap inspect].freeze

  # Sidekiq's API, where the gem's Ruby layer calls it: the commands each
  # call sends. A call of Sidekiq's API not named here fails
  # acl_lines_spec.rb until it is.
  SIDEKIQ_API = {
    "Sidekiq::Queue.all" => %w[sscan] # the set `queues`, read-only
  }.freeze
  SIDEKIQ_API_CLASSES = %w[Queue Stats ProcessSet Workers WorkSet DeadSet RetrySet ScheduledSet SortedSet].freeze
  # Module methods (the gem prepends to Sidekiq's API) send nothing.
  MODULE_METHODS = %w[prepend singleton_class include extend].freeze
  SIDEKIQ_API_CALL = /\bSidekiq::(?:#{SIDEKIQ_API_CLASSES.join("|")})\.(?!(?:#{MODULE_METHODS.join("|")})\b)\w+/

  Entry = Struct.new(:name, :args, :tags, :comment, :line)

  module_function

  # The list's entries, in order.
  def entries
    File.readlines(LIST).each_with_index.filter_map do |text, index|
      call, comment = text.chomp.split("#", 2)
      words = call.to_s.split
      next if words.empty?

      tags, args = words.drop(1).partition { _1.start_with?("@") }
      Entry.new(words.first, args, tags.map { _1.delete_prefix("@") }, comment&.strip, index + 1)
    end
  end

  # The commands named in the list, with their tags (each command's calls
  # share them).
  def listed
    entries.group_by(&:name).transform_values { |calls| calls.flat_map(&:tags).uniq }
  end

  # The commands the ACL lines must allow: every listed command but those
  # that need no rule.
  def allowed
    listed.reject { |_, tags| tags.include?("unlisted") }.keys.sort
  end

  # { "command" => ["path:line", ...] } of every command the code sends.
  def used
    found = Hash.new { |hash, key| hash[key] = [] }
    lua_sources.each { |path| scan(path, lua_calls(File.read(path)), found) }
    rust_sources.each { |path| scan(path, rust_calls(production_rust(File.read(path))), found) }
    ruby_sources.each { |path| scan(path, ruby_calls(File.read(path)), found) }
    found
  end

  def lua_sources = Dir[File.join(ROOT, "src/lua/**/*.lua")]

  def rust_sources
    Dir[File.join(ROOT, "{src,ext}/**/*.rs")].reject do |path|
      File.basename(path) == "tests.rs" || path.include?("/target/")
    end
  end

  def ruby_sources = Dir[File.join(ROOT, "lib/**/*.rb")]

  def scan(path, calls, found)
    relative = path.delete_prefix("#{ROOT}/")
    calls.each { |name, offset| found[name] << "#{relative}:#{offset}" }
  end

  # [[command, line], ...] of `redis.call('X', ...)` and `redis.pcall` (Lua
  # files, and Lua in Ruby strings).
  def lua_calls(text)
    matches(text, /redis\.p?call\(\s*['"]([A-Za-z]+)['"](?:\s*,\s*['"]([A-Za-z-]+)['"])?/)
  end

  # Commands built with the redis crate: `cmd("X")` (with `.arg("SUB")` or
  # `.arg(&["SUB", ...])` for a subcommand, maybe on the next statement), a
  # `Cmd::with_capacity(..)` whose first arguments, on the next statement,
  # are the command and its subcommand, and an atomic pipeline, which the
  # crate wraps in MULTI ... EXEC.
  def rust_calls(text)
    built = matches(text, /\bcmd\(\s*"([A-Za-z]+)"\s*\)(?:\s*;\s*\w+)?(?:\s*\.arg\(\s*&?\[?\s*"([A-Za-z-]+)")?/)
    sized = matches(text, /Cmd::with_capacity\([^;]*;\s*\w+\.arg\(\s*"([A-Za-z]+)"\s*\)(?:\.arg\(\s*"([A-Za-z-]+)")?/)
    atomic = matches(text, /\.(atomic)\(\)/).flat_map { |_, line| [["multi", line], ["exec", line]] }
    built + sized + atomic
  end

  # `conn.call("X", ...)` and pipelines', commands sent as methods of a
  # Sidekiq connection (`conn.llen(...)`), a MULTI block, and Lua in strings.
  def ruby_calls(text)
    called = matches(text, /\.call\(\s*"([A-Za-z]+)"(?:\s*,\s*"([A-Za-z-]+)")?/)
    sent = matches(text, /\b(?:conn|pipe|redis|pipeline|transaction)\.([a-z_]+)\b/)
    methods = sent.reject { |call| CONNECTION_METHODS.include?(call.first) }.flat_map do |name, line|
      name == "multi" ? [["multi", line], ["exec", line]] : [[name, line]]
    end
    api = matches(text, /(#{SIDEKIQ_API_CALL})/o).flat_map do |call, line|
      SIDEKIQ_API.transform_keys(&:downcase).fetch(call) { ["sidekiq api: #{call}"] }.map { [_1, line] }
    end
    called + methods + api + lua_calls(text)
  end

  # [[command, line], ...] of the matches of +pattern+: its first group the
  # command, its second a subcommand where the command takes one.
  def matches(text, pattern)
    text.enum_for(:scan, pattern).map do
      match = Regexp.last_match
      command = match[1].downcase
      command = "#{command}|#{match[2].downcase}" if match[2] && CONTAINERS.include?(command)
      [command, text[0, match.begin(0)].count("\n") + 1]
    end
  end

  # A Rust file without its test module (tests send commands of their own).
  def production_rust(text)
    test_module = text =~ /^\s*#\[cfg\(test\)\]\s*\n\s*(?:pub(?:\(crate\))?\s+)?mod\s/
    test_module ? text[0, test_module] : text
  end

  # The commands of README.md's ACL line for +user+ (`+x` rules).
  def readme_commands(user)
    line = File.read(File.join(ROOT, "README.md"))[/^user #{user} (.+)$/, 1]
    raise "README.md has no ACL line for user #{user}" unless line

    line.split.filter_map { _1.delete_prefix("+") if _1.start_with?("+") }.sort
  end
end
