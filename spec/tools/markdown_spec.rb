# frozen_string_literal: true

require_relative "../../tools/lib/limit_fetch_tools/markdown"

# The tables bin/bench's and bin/chaos's reports share: a column is a
# header and either a key (a path where it is an array) with a format of
# the view and its arguments, or a lambda of the row run on the view.
RSpec.describe LimitFetchTools::Markdown do
  let(:view) do
    Class.new do
      include LimitFetchTools::Markdown

      public :table

      def both(row) = "#{row["label"]} at #{row["jobs_per_s"]["median"]}"
    end.new
  end

  let(:columns) do
    [%w[variant label], ["jobs/s", "jobs_per_s", :spread, "%.0f"], ["×", "ratio", :ratio],
     ["p99", %w[latency p99], :num, "%.1f"], ["both", -> { both(_1) }]]
  end

  it "renders each cell from its column's key and format, or from its lambda on the view" do
    rows = [{"label" => "a", "jobs_per_s" => {"median" => 10.2, "min" => 9, "max" => 11}, "ratio" => 1.5,
             "latency" => {"p99" => 2.26}},
            {"label" => "b", "jobs_per_s" => {"median" => 3, "min" => 3, "max" => 3}, "ratio" => nil, "latency" => {}}]
    expect(view.table(columns, rows)).to eq(<<~MARKDOWN.chomp)
      | variant | jobs/s | × | p99 | both |
      | --- | --- | --- | --- | --- |
      | a | 10 (9–11) | ×1.50 | 2.3 | a at 10.2 |
      | b | 3 (3–3) | – | – | b at 3 |
    MARKDOWN
  end

  it "renders a template's section as its title, its prose and its table; nothing of one without rows" do
    Dir.mktmpdir do |dir|
      path = File.join(dir, "report.md.erb")
      File.write(path, <<~ERB)
        # Report

        <%- section("Ran", [["name", 0]], [["a"]]) do -%>
        Prose of <%= 1 + 1 %>.
        <%- end -%>
        <%- section("Did not run", [["name", 0]], []) do -%>
        Never <%= raise "rendered" %>.
        <%- end -%>
        The end.
      ERB
      expect(LimitFetchTools::Markdown.render(path, view.instance_eval { binding }))
        .to eq("# Report\n\n## Ran\n\nProse of 2.\n\n| name |\n| --- |\n| a |\n\nThe end.\n")
    end
  end

  it "reads a row that is an array by index" do
    expect(view.table([["name", 0], ["n", [1, :n], :num, "%d"]], [["x", {n: 4}]]))
      .to eq("| name | n |\n| --- | --- |\n| x | 4 |")
  end
end
