# frozen_string_literal: true

module LimitFetchBench
  # A PNG of the summary with gnuplot: throughput ratios to BasicFetch (with
  # and without added latency) and idle pickup latency percentiles, each
  # panel only when its section ran.
  class Chart
    HEAD = <<~GNUPLOT
      set terminal pngcairo noenhanced size %<width>d,600 font "sans,10"
      set output "%<output>s"
      set datafile missing "?"
      set multiplot layout 1,%<panels>d title "%<title>s"
      set style data histograms
      set style histogram clustered gap 1
      set style fill solid 0.85 border -1
      set boxwidth 0.9
      set grid ytics
      set key top right
      set xtics rotate by -20 scale 0 font ",9"
    GNUPLOT
    RATIOS = <<~GNUPLOT
      set title "Throughput / BasicFetch (medians of the runs)"
      set yrange [0:*]
      set arrow 1 from graph 0, first 1 to graph 1, first 1 nohead dashtype 2
      set xlabel "LimitFetch variants (10 ms jobs: against BasicFetch at concurrency 5)" font ",9"
      plot %<data>s using 2:xtic(1) title "no added latency", "" using 3 title "~1 ms added round trip"
      unset arrow 1
      unset xlabel
    GNUPLOT
    LATENCY = <<~GNUPLOT
      set title "Idle pickup latency, ms (log scale)"
      set logscale y
      set yrange [*:*]
      plot %<data>s using 2:xtic(1) title "p50", "" using 3 title "p95", "" using 4 title "p99"
    GNUPLOT

    def self.available? = system("command -v gnuplot >/dev/null 2>&1")

    def initialize(summary)
      @summary = summary
    end

    # Writes the PNG to `path`.
    def write(path)
      panels = {RATIOS => ratio_rows, LATENCY => latency_rows}.reject { _2.empty? }
      raise Failure, "nothing to chart" if panels.empty?

      plot(path, panels.each_with_index.map { |(template, rows), i| panel(template, rows, "$p#{i}") })
      path
    end

    private

    def plot(path, panels)
      title = "sidekiq-limit_fetch-rs vs BasicFetch, #{@summary["meta"]["date"]}"
      head = format(HEAD, width: 700 * panels.size, output: path, panels: panels.size, title:)
      out, status = Open3.capture2e("gnuplot", stdin_data: "#{head}#{panels.join}unset multiplot\n")
      raise Failure, "gnuplot failed:\n#{out}" unless status.success?
    end

    # The panel's rows as a data block of the script, then its plot.
    def panel(template, rows, name)
      lines = rows.map { |row| row.map { cell(_1) }.join(" ") }
      "#{name} << EOD\n#{lines.join("\n")}\nEOD\n#{format(template, data: name)}"
    end

    def cell(value)
      case value
      when nil then "?"
      when String then value.inspect
      else format("%.4f", value)
      end
    end

    def ratio_rows
      sections = @summary.values_at("throughput", "delayed")
      keys = sections.flat_map(&:keys).uniq.select { Variant[_1].baseline }
      keys.map { |key| [Variant[key].label.delete_prefix("LimitFetch, ")] + sections.map { _1.dig(key, "ratio") } }
    end

    def latency_rows
      @summary["idle"].map { |_, row| [row["label"]] + row["latency_ms"].values.map { [_1, 0.001].max } }
    end
  end
end
