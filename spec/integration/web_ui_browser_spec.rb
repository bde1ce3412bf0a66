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
# LIMIT_FETCH_SCREENSHOT=PATH also saves a screenshot of the tab while the
# jobs run (docs/limits-tab.png comes from `bin/demo --screenshot`, whose
# app has rates and parked jobs).
module WebUiBrowser
  CHROMIUM = "/usr/bin/chromium-headless-shell"
  # Debian's ruby-sidekiq ships without it; Sidekiq's layout links it.
  MISSING_SCRIPT = %r{/javascripts/application\.js\z}
  # Queue names a browser changes on the way (a line break becomes CR LF),
  # or that make a page wide.
  ODD_NAMES = ["two  spaces ", "tab\there", "multi\nline", "emoji \u{1F6A6}", "q" * 300].freeze

  # Reports every Content-Security-Policy violation of every page to the
  # test (a CDP binding), from before the page's own code runs (scripts
  # added through CDP are exempt from the CSP).
  CSP_BINDING = "__limitFetchCspViolation"
  CSP_LISTENER = <<~JS.freeze
    document.addEventListener("securitypolicyviolation", (e) => {
      #{CSP_BINDING}(e.violatedDirective + " " + (e.blockedURI || "inline") + " at " + e.documentURI);
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
  def browser
    @browser ||= Ferrum::Browser.new(browser_path: WebUiBrowser::CHROMIUM, headless: true, timeout: 10,
      process_timeout: 20, window_size: [1280, 900], browser_options: {"no-sandbox" => nil}).tap { watch(_1) }
  end

  after do |example|
    @browser&.quit
    app.warn_logs if example.exception
    app.stop_all
  end

  # Every console error, uncaught exception and CSP violation goes into
  # +problems+, but the log line of application.js's 404.
  def watch(browser)
    browser.page.command("Runtime.addBinding", name: WebUiBrowser::CSP_BINDING)
    browser.page.command("Page.addScriptToEvaluateOnNewDocument", source: WebUiBrowser::CSP_LISTENER)
    browser.on("Runtime.bindingCalled") do |params|
      problems << "CSP violation: #{params["payload"]}" if params["name"] == WebUiBrowser::CSP_BINDING
    end
    browser.on("Runtime.consoleAPICalled") do |params|
      next unless %w[error assert].include?(params["type"])

      problems << "console.#{params["type"]}: #{params["args"].map { _1["value"] || _1["description"] }.join(" ")}"
    end
    browser.on("Runtime.exceptionThrown") { problems << "exception: #{_1.dig("exceptionDetails", "text")}" }
    browser.on("Log.entryAdded") do |params|
      entry = params["entry"]
      next unless entry["level"] == "error"

      missing_script = entry["url"].to_s.match?(WebUiBrowser::MISSING_SCRIPT) && entry["text"].include?("404")
      next if entry["source"] == "network" && missing_script

      problems << "log #{entry["source"]}: #{entry["text"]} #{entry["url"]}"
    end
  end

  # Network failures of the page loads so far, application.js's 404 aside
  # (at most one per page load); then forgets them.
  def failed_requests(browser)
    traffic = browser.network.traffic
    loads = traffic.count { _1.request&.type?("Document") }
    failed = traffic.filter_map do |exchange|
      status = exchange.response&.status
      next "#{exchange.url}: #{exchange.error&.error_text || "no response"}" if status.nil? && exchange.finished?
      next unless status.nil? || status >= 400

      "#{exchange.url}: #{status || "pending"}"
    end
    browser.network.clear(:traffic)
    missing, others = failed.partition { _1.match?(%r{/javascripts/application\.js: 404\z}) }
    expect(missing.size).to be_between(1, loads)
    others
  end

  def figures(browser, queue)
    browser.at_css(%(tr.lf-queue[data-queue="#{queue}"] .lf-figures))&.text.to_s.split.join(" ")
  end

  # The Size and Latency of queue +name+ on Sidekiq's Queues page.
  def queue_cells(browser, name)
    row = browser.css("table tr").find { _1.at_css("td a")&.text == name }
    expect(row).not_to be_nil, "no row of #{name} on the Queues page"
    row.css("td.num").map { _1.text.strip }
  end

  # The text of +css+ in queue +name+'s status row, its spaces squeezed.
  def cell(browser, name, css)
    browser.at_css(%(tr.lf-queue[data-queue="#{name}"] #{css}))&.text.to_s.split.join(" ")
  end

  # The rows (tr) of queue +name+ that hold what +css+ selects, found by
  # their data-queue attribute as the DOM holds it (tabs and line breaks
  # kept): a CSS selector cannot name them all.
  def rows_of(browser, name, css)
    rows = browser.css("tr[data-queue]")
    indexes = browser.evaluate(<<~JS, name, css)
      [...document.querySelectorAll("tr[data-queue]")].flatMap((tr, i) =>
        tr.dataset.queue === arguments[0] && tr.querySelector(arguments[1]) ? [i] : [])
    JS
    indexes.map { rows[_1] }
  end

  # Fills in queue +name+'s form +css+ (its +fields+ typed over what they
  # hold), submits it with a click, as a person would, and waits for the
  # page it leads to.
  def submit_form(browser, name, css, fields = {})
    rows = rows_of(browser, name, "form.#{css}")
    expect(rows.size).to eq(1), "#{rows.size} rows with a #{css} form for #{name.inspect}"
    form = rows.first.at_css("form.#{css}")
    fields.each { |field, text| form.at_css(%([name="#{field}"])).focus.type([:Ctrl, "a"], :Backspace, text) }
    browser.execute("window.lfBeforeSubmit = true")
    button = form.at_css(%(input[type="submit"]))
    # in the middle of the window: Sidekiq's footer, fixed to its bottom,
    # would take a click on a button behind it
    button.evaluate("this.scrollIntoView({block: 'center'})")
    button.click
    wait_until(message: "the page after the #{css} form of #{name.inspect}") do
      browser.evaluate("!window.lfBeforeSubmit && document.readyState === 'complete'")
    rescue Ferrum::JavaScriptError, Ferrum::NodeNotFoundError
      false # between pages
    end
    browser.network.wait_for_idle
  end

  # Every queue the tab lists, with its limit, process limit and pause, as
  # Redis holds them.
  def queue_states
    Sidekiq::LimitFetch.queues.to_h { |queue| [queue.name, [queue.limit, queue.process_limit, queue.paused?]] }
  end

  it "changes a limit through the form, and a running sidekiq process obeys it" do
    keyed = LimitFetchSpec::KeyedJobs::QUEUE
    config = app.write_config("web", queues: ["webui", "reports", keyed, "parked"], limits: {"webui" => 1},
      concurrency: 8)
    before = registered_capsules
    process = app.spawn("w1", config: config)
    await_registration([process], before)
    Sidekiq::LimitFetch.queue("reports").limit = 2
    Sidekiq::LimitFetch.queue("reports").pause_for(600)
    3.times { LimitFetchSpec::SyncJob.perform_async("tenant-a", 3) }
    LimitFetchSpec::SyncJob.perform_async("tenant-b", 3)
    jids = push_jobs("webui", 16, seconds: 0.4)
    wait_until(message: "the first job to run") { running("webui") == 1 }
    wait_until(message: "tenant-a's jobs to be parked") do
      Sidekiq::LimitFetch.job_limit(LimitFetchSpec::SyncJob, key: "tenant-a").parked == 2
    end
    # a queue whose one job waits parked: tenant-a's slot is taken
    LimitFetchSpec::SyncJob.set(queue: "parked").perform_async("tenant-a", 3)
    wait_until(message: "the job of queue parked to be parked") do
      Sidekiq::LimitFetch.job_limit(LimitFetchSpec::SyncJob, key: "tenant-a").parked == 3
    end

    browser.go_to(@web.limits_url)
    expect(browser.at_css("h1").text).to eq("Limits")
    expect(figures(browser, "webui")).to eq("1 / 1")
    expect(browser.at_css(%(tr.lf-queue[data-queue="reports"] .lf-paused))).not_to be_nil
    expect(browser.evaluate("getComputedStyle(document.querySelector('svg.lf-bar .lf-fill')).fill"))
      .not_to eq("rgb(0, 0, 0)") # the stylesheet applied
    expect(max_running("webui")).to eq(1)
    keys = browser.css("table.lf-scopes tr.lf-key").map { |tr| tr.css("td").map { _1.text.strip } }
    expect(keys).to eq([["tenant-a", "1 / 1 (default)", "none", "3", "–"],
                        ["tenant-b", "1 / 1 (default)", "none", "0", "–"]])
    expect(cell(browser, "parked", ".lf-queued")).to eq("0")
    expect(cell(browser, "parked", ".lf-parked")).to eq("1")
    expect(cell(browser, "parked", ".lf-explain")).to include("1 parked")

    submit_form(browser, "webui", "lf-set-limit", "value" => "3")
    expect(browser.current_url).to eq(@web.limits_url)
    expect(Sidekiq::LimitFetch.queue("webui").limit).to eq(3)
    expect(figures(browser, "webui")).to end_with("/ 3")
    submit_form(browser, "reports", "lf-set-rate", "value" => "2/60")
    expect(Sidekiq::LimitFetch.queue("reports").rate.to_s).to eq("2/60")
    expect(cell(browser, "reports", ".lf-rate")).to eq("0 / 2 per 60 s")

    # The most at once, as the jobs recorded it: on a loaded machine the
    # form's steps may take longer than the 16 jobs, 3 at a time, do.
    wait_until(timeout: 10, message: -> { "3 jobs to run at once, at most #{max_running("webui")} did" }) do
      max_running("webui") == 3
    end
    if (path = ENV.fetch("LIMIT_FETCH_SCREENSHOT", nil))
      browser.refresh
      # the whole page in the window: Sidekiq's footer is fixed to its bottom
      browser.resize(width: 1280, height: browser.evaluate("document.documentElement.scrollHeight"))
      browser.screenshot(path: path)
    end
    wait_until(timeout: 20, message: -> { "16 jobs done, #{done_jids("webui").size} are" }) do
      done_jids("webui").size >= jids.size
    end
    expect(done_jids("webui").sort).to eq(jids.sort)
    expect(max_running("webui")).to eq(3)
    expect(failed_requests(browser)).to eq([])
    expect(problems).to eq([])

    # a bad limit: the page says why, and nothing changed
    browser.go_to(@web.limits_url)
    submit_form(browser, "webui", "lf-set-limit", "value" => "-2")
    expect(browser.at_css(".lf-error")&.text.to_s).to include("invalid limit for queue \"webui\": \"-2\"")
    expect(Sidekiq::LimitFetch.queue("webui").limit).to eq(3)
    # the page that says why comes with a 422, which the browser logs
    expect(failed_requests(browser)).to eq(["#{@web.limits_url}/limit: 422"])
    expect(problems).to contain_exactly(a_string_matching(%r{\Alog network: .* 422 .* #{@web.limits_url}/limit\z}))
    problems.clear

    # the watch sees a violation, twice: an inline style, which the CSP refuses
    browser.execute("document.body.insertAdjacentHTML('beforeend', '<p style=\"color: red\">x</p>')")
    wait_until(timeout: 2, message: -> { "the CSP violation to be reported: #{problems}" }) { problems.size == 2 }
    expect(problems).to contain_exactly(a_string_starting_with("log security: Applying inline style violates"),
      "CSP violation: style-src-attr inline at #{@web.limits_url}/limit")
    stop_process(process)
  end

  it "shows a back-off set from the console and adaptive limits in force; clicking Resume ends the back-off" do
    # A queue's adaptive limit, as a process that boots writes it, grown to 7.
    {"limit" => "1", "limit_range" => "1..20", "adaptive" => "7 1"}.each do |kind, value|
      redis.call("SET", queue_key("partner", kind), value)
    end
    2.times { LimitFetchSpec::AdaptiveCallJob.perform_async("acme", 4, 0) }
    fetcher = fetcher_for(build_capsule(queues: [LimitFetchSpec::BackOffJobs::QUEUE], concurrency: 5))
    expect(fetcher.retrieve_work).not_to be_nil
    expect(fetcher.retrieve_work).to be_nil # the other parked: the limit in force is its floor, 1
    limit = Sidekiq::LimitFetch.job_limit(LimitFetchSpec::AdaptiveCallJob, key: "acme")
    limit.back_off(120)

    browser.go_to(@web.limits_url)
    key = browser.at_css("table.lf-scopes tr.lf-key")
    back_off = /\Abacking off, 1[12]\d\.\d s left \(from the console\)\z/
    cells = key.css("td").map { _1.text.split.join(" ") }
    expect(cells).to match(["acme", "1 / adaptive 1 of 1..6", "none", "1", back_off])
    partner = browser.at_css(%(tr.lf-queue[data-queue="partner"]))
    expect(partner.at_css(".lf-figures").text.split.join(" ")).to eq("0 / 7 (1..20)")
    expect(partner.at_css(".lf-explain").text.strip).to eq("adaptive 7 of 1..20: empty")
    browser.execute("window.lfBeforeSubmit = true")
    button = key.at_css(%(form.lf-resume input[type="submit"]))
    expect(button.value).to eq("Resume")
    button.evaluate("this.scrollIntoView({block: 'center'})")
    button.click
    wait_until(message: "the page after Resume") do
      browser.evaluate("!window.lfBeforeSubmit && document.readyState === 'complete'")
    rescue Ferrum::JavaScriptError, Ferrum::NodeNotFoundError
      false # between pages
    end
    browser.network.wait_for_idle

    expect(browser.current_url).to eq(@web.limits_url)
    expect(limit.back_off_state).to be_nil
    expect(browser.at_css("table.lf-scopes tr.lf-key td.lf-back-off").text.strip).to eq("–")
    expect(failed_requests(browser)).to eq([])
    expect(problems).to eq([])
  end

  it "shows a fair class's tenants against their shares, in as many scripts run however many tenants" do
    3.times { LimitFetchSpec::FairJob.perform_async("acme", 0) }
    2.times { LimitFetchSpec::FairJob.perform_async("b", 0) }
    fetcher = fetcher_for(build_capsule(queues: [LimitFetchSpec::FairJob::QUEUE], concurrency: 5))
    4.times { expect(fetcher.retrieve_work).not_to be_nil }
    expect(fetcher.retrieve_work).to be_nil # b's second waits its turn: the class's 4 are taken
    scripts_run = -> { redis.call("INFO", "commandstats")[/^cmdstat_fcall:calls=(\d+)/, 1].to_i }
    keys = -> { browser.css("table.lf-scopes tr.lf-key").map { |tr| tr.css("td").first(2).map { _1.text.strip } } }

    before = scripts_run.call
    browser.go_to(@web.limits_url)
    per_page = scripts_run.call - before
    klass = browser.css("table.lf-class-limits tr.lf-class-limit")
                   .find { _1.at_css("code").text == "LimitFetchSpec::FairJob" }
    expect(klass.at_css(".lf-running").text.split.join(" "))
      .to eq("4 / 4 (default) shared fairly among its tenants with work: 2")
    expect(keys.call).to eq([["acme", "3 of fair 2.0 of 4"], ["b", "1 of fair 2.0 of 4"]])

    %w[c d e].each { LimitFetchSpec::FairJob.perform_async(_1, 0) }
    expect(fetcher.retrieve_work).to be_nil # each parks as its tenant's
    before = scripts_run.call
    browser.refresh
    expect(scripts_run.call - before).to eq(per_page)
    expect(keys.call).to eq([["acme", "3 of fair 0.8 of 4"], ["b", "1 of fair 0.8 of 4"], ["c", "0 of fair 0.8 of 4"],
                             ["d", "0 of fair 0.8 of 4"], ["e", "0 of fair 0.8 of 4"]])
    expect(browser.at_css(".lf-fair").text).to eq("shared fairly among its tenants with work: 5")
    expect(failed_requests(browser)).to eq([])
    expect(problems).to eq([])
  end

  it "shows a fair queue's fair limit, its slots and its tenants' shares as the queue's" do
    name = LimitFetchSpec::ImportJob::QUEUE
    Sidekiq::LimitFetch.queue(name).fair_limit = 3
    2.times { LimitFetchSpec::ImportJob.perform_async("acme", 0) }
    LimitFetchSpec::ImportJob.perform_async("b", 0)
    LimitFetchSpec::PlainImportJob.perform_async(0)
    fetcher = fetcher_for(build_capsule(queues: [name], concurrency: 5))
    3.times { expect(fetcher.retrieve_work).not_to be_nil } # acme's 2, then b's 1: the queue's 3 are taken
    expect(fetcher.retrieve_work).to be_nil # the keyless job waits its turn
    text = ->(node) { node.text.split.join(" ") }

    browser.go_to(@web.limits_url)
    queue = browser.css("tr.lf-queue").find { _1.attribute("data-queue") == name }
    expect(text.call(queue.at_css(".lf-figures"))).to eq("3 / fair 3")
    expect(text.call(queue.at_css(".lf-explain"))).to eq("fair 3, 3 tenants with work: at its fair limit 3/3")
    slots = browser.at_css("table.lf-fair-queues tr.lf-fair-queue")
    expect(text.call(slots.at_css(".lf-running"))).to eq("3 / fair 3 shared fairly among its tenants with work: 3")
    expect(slots.css("tr.lf-tenant").map { |tr| tr.css("td").map { text.call(_1) } })
      .to eq([["acme", "2 of fair 1.0 of 3", "0"], ["b", "1 of fair 1.0 of 3", "0"],
              ["LimitFetchSpec::PlainImportJob", "0 of fair 1.0 of 3", "1"]])
    expect(browser.css("table.lf-class-limits code").map(&:text)).to eq(["LimitFetchSpec::PlainImportJob"])
    expect(browser.body).not_to include("queue:#{name}")

    submit_form(browser, name, "lf-set-fair-limit", "value" => "4")
    expect(browser.current_url).to eq(@web.limits_url)
    expect(Sidekiq::LimitFetch.queue(name).fair_limit).to eq(4)
    queue = browser.css("tr.lf-queue").find { _1.attribute("data-queue") == name }
    expect(text.call(queue.at_css(".lf-figures"))).to eq("3 / fair 4")
    expect(failed_requests(browser)).to eq([])
    expect(problems).to eq([])
  end

  it "counts jobs parked at their job limit in Sidekiq's dashboard (Enqueued) and Queues page (Size)" do
    keyed = LimitFetchSpec::KeyedJobs::QUEUE
    Sidekiq::LimitFetch.configuration[:lookahead] = 1000
    Sidekiq::Client.push_bulk("class" => LimitFetchSpec::SyncJob, "args" => Array.new(1000) { ["acme", 0] })
    fetcher = fetcher_for(build_capsule(queues: [keyed]))
    wait_until(message: -> { "the queue's list to empty (#{queue_length(keyed)} left)" }) do
      fetcher.retrieve_work
      queue_length(keyed).zero?
    end
    expect(Sidekiq::LimitFetch.job_limit(LimitFetchSpec::SyncJob, key: "acme").parked).to eq(999)

    browser.go_to("#{@web.url}/")
    expect(browser.at_css("#txtEnqueued").text.strip).to eq("999")
    browser.go_to("#{@web.url}/queues")
    size, latency = queue_cells(browser, keyed)
    expect(size).to eq("999")
    expect(latency.to_f).to be > 0

    Sidekiq::LimitFetch.configuration[:count_parked_as_waiting] = false
    browser.refresh
    expect(queue_cells(browser, keyed).first).to eq("0")
    # Debian's ruby-sidekiq ships without the dashboard's script too
    expect(failed_requests(browser)).to eq(["#{@web.url}/javascripts/dashboard.js: 404"])
    expect(problems).to all(match(%r{\Alog network: .*404.* #{@web.url}/javascripts/dashboard\.js\z}))
  end

  it "changes queues of any name through their forms, each exactly, on a page no wider than the window" do
    (WebUiBrowser::ODD_NAMES + %w[bystander gone]).each { |name| push_jobs(name, 1) }
    expected = queue_states
    expect(expected.keys).to match_array(WebUiBrowser::ODD_NAMES + %w[bystander gone])

    browser.go_to(@web.limits_url)
    # the 300-character name wraps: nothing is wider than the window
    widths = browser.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    expect(widths.first).to be <= widths.last
    rows_of(browser, "q" * 300, "form").each do |row|
      right = row.evaluate("Math.max(...[...this.querySelectorAll('input, select')].map(e => " \
                           "e.getBoundingClientRect().right))")
      expect(right).to be <= widths.last
    end

    # a form of a queue Redis no longer knows changes nothing, and says so
    Sidekiq::Queue.new("gone").clear
    expected.delete("gone")
    submit_form(browser, "gone", "lf-set-limit", "value" => "5")
    expect(browser.at_css(".lf-error")&.text.to_s.strip).to start_with("Nothing was changed: ")
    expect(browser.at_css(".lf-error").text).to include("gone")
    expect(queue_states).to eq(expected)
    expect(failed_requests(browser)).to eq(["#{@web.limits_url}/limit: 422"])
    problems.clear

    WebUiBrowser::ODD_NAMES.each do |name|
      browser.go_to(@web.limits_url)
      submit_form(browser, name, "lf-set-limit", "value" => "4")
      expected[name] = [4, nil, false]
      expect(queue_states).to eq(expected), "the limit of #{name.inspect}"
      submit_form(browser, name, "lf-set-process-limit", "value" => "2")
      expected[name] = [4, 2, false]
      expect(queue_states).to eq(expected), "the process limit of #{name.inspect}"
      submit_form(browser, name, "lf-pause", "for" => "5")
      expected[name] = [4, 2, true]
      expect(queue_states).to eq(expected), "the pause of #{name.inspect}"
      expect(Sidekiq::LimitFetch.queue(name).paused_until).to be_within(5).of(Time.now + 300)
      expect(browser.current_url).to eq(@web.limits_url)
    end

    # a pause's end, once, in one format
    row = rows_of(browser, "emoji \u{1F6A6}", ".lf-figures").first
    expect(row.text.scan(/\d\d:\d\d(?::\d\d)?/).size).to eq(1), row.text
    expect(failed_requests(browser)).to eq([])
    expect(problems).to eq([])
  end

  it "keeps each queue's forms beside its row among 300 queues" do
    names = Array.new(300) { format("queue-%03d", _1) }
    names.each { Sidekiq::LimitFetch.queue(_1).limit = 2 }

    browser.go_to(@web.limits_url)
    # per queue: how far below the bottom of its status row its limit form begins
    gaps = browser.evaluate(<<~JS)
      Object.fromEntries([...document.querySelectorAll("tr.lf-queue")].map((row) => {
        const form = [...document.querySelectorAll("form.lf-set-limit")]
          .find((f) => f.closest("tr[data-queue]").dataset.queue === row.dataset.queue);
        return [row.dataset.queue, form.getBoundingClientRect().top - row.getBoundingClientRect().bottom];
      }))
    JS
    expect(gaps.keys).to match_array(names)
    expect(gaps.values).to all(be_between(0, 60)), "gaps over 60 px: #{gaps.reject { _2.between?(0, 60) }.first(3)}"
    expect(failed_requests(browser)).to eq([])
    expect(problems).to eq([])
  end
end
