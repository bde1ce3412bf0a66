# frozen_string_literal: true

require "ferrum"
require_relative "../../tools/lib/limit_fetch_tools/web_server"
require_relative "../support/sidekiq_app"
require_relative "../support/sidekiq_processes"

# The Limits tab in a real headless Chromium (Debian's
# chromium-headless-shell, driven by ferrum): Sidekiq::Web served by puma
# from this process, a real `sidekiq` process running the jobs. Run it alone
# with `rspec --tag browser`.
#
# LIMIT_FETCH_SCREENSHOT=docs/limits-tab.png also saves a screenshot of the
# tab while the jobs run.
module WebUiBrowser
  CHROMIUM = "/usr/bin/chromium-headless-shell"
  # Debian's ruby-sidekiq ships without it; Sidekiq's layout links it.
  MISSING_SCRIPT = %r{/javascripts/application\.js\z}

  # Reports every Content-Security-Policy violation into window.__cspViolations,
  # from before the page's own code runs (CDP scripts are exempt from the CSP).
  CSP_LISTENER = <<~JS
    window.__cspViolations = [];
    document.addEventListener("securitypolicyviolation", (e) => {
      window.__cspViolations.push(e.violatedDirective + " " + (e.blockedURI || "inline") + " at " + e.sourceFile);
    });
  JS
end

RSpec.describe "the Limits tab in a headless browser", :browser, :e2e do
  include SidekiqProcesses
  include WebUiBrowser

  before(:context) do
    @app = SidekiqApp.new
    @web = LimitFetchTools::WebServer.new.start
  end

  after(:context) do
    @web&.stop
    @app&.remove
  end

  let(:app) { @app }
  let(:problems) { [] }
  let(:browser) do
    Ferrum::Browser.new(browser_path: CHROMIUM, headless: true, timeout: 10, process_timeout: 20,
      window_size: [1280, 900], browser_options: {"no-sandbox" => nil, "disable-gpu" => nil}).tap do |browser|
      watch(browser)
    end
  end

  after do |example|
    browser.quit
    if example.exception
      Dir[File.join(app.dir, "log", "*.log")].each do |path|
        warn "---- #{File.basename(path)} (last 40 lines)\n#{File.readlines(path).last(40).join}"
      end
    end
    app.stop_all
  end

  # Every failed request, console error, uncaught exception and CSP
  # violation goes into +problems+, but the one 404 of application.js.
  def watch(browser)
    browser.page.command("Page.addScriptToEvaluateOnNewDocument", source: CSP_LISTENER)
    browser.on("Runtime.consoleAPICalled") do |params|
      next unless %w[error assert].include?(params["type"])

      problems << "console.#{params["type"]}: #{params["args"].map { _1["value"] || _1["description"] }.join(" ")}"
    end
    browser.on("Runtime.exceptionThrown") { problems << "exception: #{_1.dig("exceptionDetails", "text")}" }
    browser.on("Log.entryAdded") do |params|
      entry = params["entry"]
      next unless entry["level"] == "error"
      next if entry["source"] == "network" && entry["url"]&.match?(MISSING_SCRIPT) && entry["text"].include?("404")

      problems << "log #{entry["source"]}: #{entry["text"]} #{entry["url"]}"
    end
  end

  # Network failures of the page loads so far, application.js's 404 aside
  # (at most one per page load); then forgets them.
  def failed_requests(browser, loads:)
    failed = browser.network.traffic.filter_map do |exchange|
      status = exchange.response&.status
      next "#{exchange.url}: #{exchange.error&.error_text || "no response"}" if status.nil? && exchange.finished?
      next unless status.nil? || status >= 400

      "#{exchange.url}: #{status || "pending"}"
    end
    browser.network.clear(:traffic)
    missing, others = failed.partition { _1.match?(%r{/javascripts/application\.js: 404\z}) }
    expect(missing.size).to be <= loads
    others
  end

  def csp_violations(browser) = browser.evaluate("window.__cspViolations")

  def figures(browser, queue)
    browser.at_css(%(tr.lf-queue[data-queue="#{queue}"] .lf-figures))&.text.to_s.split.join(" ")
  end

  it "changes a limit through the form, and a running sidekiq process obeys it" do
    config = app.write_config("web", queues: %w[webui reports], limits: {"webui" => 1}, concurrency: 5)
    before = registered_capsules
    process = app.spawn("w1", config: config)
    await_registration([process], before)
    Sidekiq::LimitFetch.queue("reports").limit = 2
    Sidekiq::LimitFetch.queue("reports").pause_for(600)
    jids = push_jobs("webui", 16, seconds: 0.4)
    wait_until(message: "the first job to run") { running("webui") == 1 }

    browser.go_to(@web.limits_url)
    expect(browser.at_css("h1").text).to eq("Limits")
    expect(figures(browser, "webui")).to eq("1 / 1")
    expect(browser.at_css(%(tr.lf-queue[data-queue="reports"] .lf-paused))).not_to be_nil
    expect(browser.evaluate("getComputedStyle(document.querySelector('svg.lf-bar .lf-fill')).fill"))
      .not_to eq("rgb(0, 0, 0)") # the stylesheet applied
    expect(max_running("webui")).to eq(1)

    input = browser.at_css(%(table.lf-forms tr[data-queue="webui"] form.lf-set-limit input[name="value"]))
    input.focus.type([:Ctrl, "a"], :Backspace, "3")
    browser.at_css(%(table.lf-forms tr[data-queue="webui"] form.lf-set-limit input[type="submit"])).click
    browser.network.wait_for_idle
    expect(browser.current_url).to eq(@web.limits_url)
    expect(Sidekiq::LimitFetch.queue("webui").limit).to eq(3)
    expect(figures(browser, "webui")).to end_with("/ 3")

    wait_until(timeout: 10, message: -> { "3 jobs to run at once, at most #{max_running("webui")} did" }) do
      running("webui") == 3
    end
    if (path = ENV.fetch("LIMIT_FETCH_SCREENSHOT", nil))
      browser.refresh
      browser.screenshot(path: path, full: true)
    end
    wait_for_done(jids, timeout: 20)
    expect(max_running("webui")).to eq(3)

    # a bad limit: the page says why, and nothing changed
    browser.go_to(@web.limits_url)
    input = browser.at_css(%(table.lf-forms tr[data-queue="webui"] form.lf-set-limit input[name="value"]))
    input.focus.type([:Ctrl, "a"], :Backspace, "-2")
    browser.at_css(%(table.lf-forms tr[data-queue="webui"] form.lf-set-limit input[type="submit"])).click
    browser.network.wait_for_idle
    expect(browser.at_css(".lf-error")&.text.to_s).to include("invalid limit for queue \"webui\": \"-2\"")
    expect(Sidekiq::LimitFetch.queue("webui").limit).to eq(3)

    expect(failed_requests(browser, loads: 4)).to eq([])
    expect(csp_violations(browser)).to eq([])
    expect(problems).to eq([])

    # the watch sees a violation: an inline style the CSP refuses
    browser.execute("document.body.insertAdjacentHTML('beforeend', '<p style=\"color: red\">x</p>')")
    wait_until(timeout: 2, message: "the CSP violation to be reported") { csp_violations(browser).any? }
    stop_process(process)
  end
end
