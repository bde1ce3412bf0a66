# frozen_string_literal: true

require "tsort"

# The core's files import one way (src/README.md, "Files"): no two files of
# src/ import each other, directly or in a loop, but for a mod.rs or lib.rs
# declaring and re-exporting the files below it. An import is any path the
# code names from `crate::`, `super::` or `self::` (in a `use` or inline),
# outside the file's tests; it goes to the file of the module the path
# leads to.
module SrcImports
  SRC = File.expand_path("../src", __dir__)

  # The module path (["capsule", "hand_over"]) of the file at +path+.
  def self.module_of(path)
    parts = path.delete_prefix("#{SRC}/").delete_suffix(".rs").split("/")
    parts.pop if %w[mod lib].include?(parts.last)
    parts
  end

  # The file of the deepest module +segments+ name (an item's path ends in
  # its module's file).
  def self.file_of(segments)
    found = File.join(SRC, "lib.rs")
    segments.each_with_index do |_, i|
      base = File.join(SRC, *segments[0..i])
      file = ["#{base}.rs", File.join(base, "mod.rs")].find { File.exist?(_1) }
      break unless file

      found = file
    end
    found
  end

  def self.imports(path)
    code = File.read(path).split(/^\s*#\[cfg\(test\)\]/).first
    own = module_of(path)
    code.scan(/\b(crate|super|self)((?:::\w+)+)/).map do |root, rest|
      segments = rest.split("::").drop(1)
      base = {"crate" => [], "super" => own[0...-1], "self" => own}.fetch(root)
      file_of(base + segments)
    end.uniq - [path]
  end

  # Files below the folder a mod.rs or lib.rs stands for.
  def self.below?(parent, child)
    return false unless %w[mod.rs lib.rs].include?(File.basename(parent))

    child.start_with?("#{File.dirname(parent)}/")
  end

  def self.graph
    Dir[File.join(SRC, "**/*.rs")].to_h do |path|
      [path, imports(path).reject { below?(path, _1) }]
    end
  end

  def self.loops(graph)
    each_node = ->(&block) { graph.each_key(&block) }
    each_child = ->(node, &block) { graph.fetch(node, []).each(&block) }
    TSort.strongly_connected_components(each_node, each_child).select { _1.size > 1 }
  end
end

RSpec.describe "the core's files" do
  it "import one way: no two files of src/ import each other, directly or in a loop" do
    graph = SrcImports.graph
    expect(graph.values.flatten).to include(File.join(SrcImports::SRC, "connection.rs")) # it reads imports
    loops = SrcImports.loops(graph).map { |files| files.map { _1.delete_prefix("#{SrcImports::SRC}/") }.sort }
    expect(loops).to eq([]), "files that import each other: #{loops.map { _1.join(" <-> ") }.join("; ")}"
  end

  it "are at most 350 lines each, Rust and Lua" do
    files = Dir[File.join(SrcImports::SRC, "**", "*.{rs,lua}")]
    expect(files.size).to be > 50
    long = files.to_h { [_1.delete_prefix("#{SrcImports::SRC}/"), File.foreach(_1).count] }.select { |_, lines| lines > 350 }
    expect(long).to eq({}), "over 350 lines (split by concept, as src/README.md's files are): #{long}"
  end
end
