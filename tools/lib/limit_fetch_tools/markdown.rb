# frozen_string_literal: true

require "erb"

module LimitFetchTools
  # What bin/bench's and bin/chaos's reports share: a view (a class that
  # includes this module) renders an ERB template of the report's prose,
  # whose fields are the view's methods, and its tables from column lists,
  # one [header, cell...] per column: [header, key, format, *args], the
  # row's value at key (an array: a path) through a format of the view
  # (num, spread...: its first argument, the value), or as it is without;
  # or [header, lambda], the lambda of the row run on the view.
  module Markdown
    module_function

    # The template at `path` (ERB, `-%>` trims a line's end), rendered in
    # `scope` (the view's binding: its methods and constants are the
    # fields), into the view's @markdown (so that #section can frame what
    # its block wrote); the blank lines that end it come out as one newline.
    def render(path, scope)
      ERB.new(File.read(path), trim_mode: "-", eoutvar: "@markdown").result(scope).sub(/\n*\z/, "\n")
    end

    # In a template, a section: its title, the prose the block writes, the
    # table of `rows`; nothing without rows (a section that did not run).
    def section(title, columns, rows)
      return unless rows&.any?

      start = @markdown.size
      yield
      @markdown << "\n#{table(columns, rows)}\n\n"
      @markdown.insert(start, "## #{title}\n\n")
    end

    # One line per row, each cell from its column.
    def table(columns, rows) = grid(columns.map(&:first), rows.map { |row| columns.map { cell(row, *_1.drop(1)) } })

    def cell(row, key, how = nil, *)
      return instance_exec(row, &key) if key.is_a?(Proc)

      value = row.dig(*key)
      how ? send(how, value, *) : value
    end

    def grid(head, rows) = [head, head.map { "---" }, *rows].map { "| #{_1.join(" | ")} |" }.join("\n")
    def num(value, fmt) = value ? format(fmt, value) : "–"
    def ratio(value) = value ? format("×%.2f", value) : "–"
    # "28.0 ×2.95"; the value alone without a ratio.
    def with_ratio(value, fmt, factor) = value ? [format(fmt, value), (ratio(factor) if factor)].compact.join(" ") : "–"
    # "9695 (9503–9731)": a median and its range.
    def spread(spread, fmt) = spread ? format("#{fmt} (#{fmt}–#{fmt})", *spread.values_at("median", "min", "max")) : "–"
  end
end
