# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    class CLI
      # Rows of text cells under +headers+, columns aligned by the widest
      # cell, two spaces apart: what Table and JobTable print.
      module TextTable
        module_function

        def render(headers, rows)
          rows = [headers] + rows
          widths = rows.transpose.map { |column| column.map(&:length).max }
          rows.map { |row| "#{row.zip(widths).map { |cell, width| cell.ljust(width) }.join("  ").rstrip}\n" }.join
        end
      end
    end
  end
end
