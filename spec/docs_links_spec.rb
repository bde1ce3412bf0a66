# frozen_string_literal: true

# Every relative link of the user's documentation (README.md, CHANGELOG.md,
# docs/) leads to a file of the repository and, with a #fragment, to a
# heading of that page, by the anchors GitHub gives headings. Links in code
# (fenced blocks, `spans`) are not links; addresses with a scheme (https:)
# are not checked.
RSpec.describe "the documentation's links" do
  root = File.expand_path("..", __dir__)
  pages = ["README.md", "CHANGELOG.md", *Dir.chdir(root) { Dir["docs/**/*.md"].sort }]

  # The page's text without code: fenced blocks, then inline spans.
  prose = lambda do |path|
    text = File.read(File.join(root, path))
    text.gsub(/^ *```.*?^ *```[^\n]*$/m, "").gsub(/`[^`\n]*`/, "")
  end

  # GitHub's anchors of a page's headings: the text without markup,
  # lowercased, with what is not a letter, digit, space, hyphen or
  # underscore removed and spaces turned into hyphens; a repeated one gets
  # -1, -2...
  anchors = Hash.new do |cache, path|
    text = File.read(File.join(root, path)).gsub(/^ *```.*?^ *```[^\n]*$/m, "")
    seen = Hash.new(0)
    cache[path] = text.scan(/^\#{1,6}[ \t]+(.+?)[ \t#]*$/).flatten.to_set do |heading|
      plain = heading.gsub(/!?\[([^\]]*)\]\([^)]*\)/, '\1').delete("`*").downcase
      slug = plain.gsub(/[^\p{L}\p{N}\- _]/, "").tr(" ", "-")
      count = seen[slug]
      seen[slug] += 1
      count.zero? ? slug : "#{slug}-#{count}"
    end
  end

  broken = lambda do
    pages.flat_map do |page|
      prose.call(page).scan(/!?\[[^\]]*\]\(([^)\s]+)[^)]*\)/).flatten.filter_map do |target|
        next if target.match?(/\A[a-z][a-z0-9+.-]*:/i)

        path, fragment = target.split("#", 2)
        file = path.empty? ? page : File.join(File.dirname(page), path)
        full = File.expand_path(file, root)
        relative = full.delete_prefix("#{root}/")
        if !File.exist?(full)
          "#{page}: #{target} (no #{relative})"
        elsif fragment && !(File.file?(full) && anchors[relative].include?(fragment))
          "#{page}: #{target} (no heading ##{fragment} in #{relative})"
        end
      end
    end
  end

  it "reads the pages it checks" do
    expect(pages).to include("README.md", "docs/how-it-works.md")
    expect(anchors["docs/how-it-works.md"]).to include("waiting-the-doorbell", "terms")
  end

  it "lead to existing files and headings" do
    expect(broken.call).to eq([])
  end
end
