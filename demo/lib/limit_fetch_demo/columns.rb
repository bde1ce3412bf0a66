# frozen_string_literal: true

module LimitFetchDemo
  # Lines of fixed-width columns: a positive width aligns its cells right, a
  # negative one left.
  class Columns
    def initialize(*widths)
      @widths = widths
    end

    def line(*cells)
      cells.zip(@widths).map { |cell, width| align(cell.to_s, width) }.join("  ").rstrip
    end

    private

    def align(text, width)
      width.negative? ? text.ljust(-width) : text.rjust(width)
    end
  end
end
