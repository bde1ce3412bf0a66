# frozen_string_literal: true

module LimitFetchDemo
  # bin/demo --screenshot PATH: the Limits tab of the Web UI the demo
  # serves, in headless Chromium (ferrum and Debian's
  # chromium-headless-shell, as bin/sandbox has them), the whole page in a
  # window 1280 px wide, taken in a thread of its own once jobs wait parked
  # behind the hot tenant's limit and behind the rate. Loaded once the
  # app's bundle, which then has ferrum, is set up.
  class Screenshot
    GEMS = %w[ferrum].freeze
    CHROMIUM = "/usr/bin/chromium-headless-shell"
    WIDTH = 1280

    def initialize(path, url)
      require "ferrum"
      @path = File.expand_path(path)
      @url = url
    end

    # Takes it, once, when `now` (a Spotlight::Now) shows both kinds of
    # parked jobs.
    def offer(now)
      return if @thread || now.hot_parked < 10 || now.rated_parked.zero?

      @thread = Thread.new { shoot }
    end

    # Waits for it; raises Failure if it failed or was never taken.
    def finish
      raise Failure, "no screenshot: jobs never waited behind both limits at once" unless @thread

      @thread.join
      puts "==> The Limits tab's screenshot is in #{@path}"
    rescue Ferrum::Error => e
      raise Failure, "the screenshot failed: #{e.message}"
    end

    private

    def shoot
      browser = Ferrum::Browser.new(browser_path: CHROMIUM, headless: true, timeout: 10, process_timeout: 20,
        window_size: [WIDTH, 900], browser_options: {"no-sandbox" => nil})
      browser.go_to(@url)
      # the whole page in the window: Sidekiq's footer is fixed to its bottom
      browser.resize(width: WIDTH, height: browser.evaluate("document.documentElement.scrollHeight"))
      browser.screenshot(path: @path)
    ensure
      browser&.quit
    end
  end
end
