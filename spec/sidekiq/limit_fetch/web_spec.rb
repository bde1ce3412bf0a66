# frozen_string_literal: true

require "nokogiri"
require "rack/session"
require "rack/test"
require "sidekiq/limit_fetch/web"

# Every route of the "Limits" tab, through Sidekiq::Web as an app mounts it
# (with a session), against the test Redis; jobs run in a real embedded
# Sidekiq. The browser test is spec/integration/web_ui_browser_spec.rb.
RSpec.describe Sidekiq::LimitFetch::Web, :web do
  include Rack::Test::Methods

  def app
    secret = SecureRandom.hex(32)
    Rack::Builder.new do
      use Rack::Session::Cookie, secret: secret, same_site: true
      run Sidekiq::Web
    end
  end

  # A form post as a browser sends it from the tab itself (Sidekiq 8.1
  # accepts a POST only with Sec-Fetch-Site: same-origin), its queue named
  # as the forms name it (+raw+: the queue field as given).
  def submit(action, params, site: "same-origin", raw: false)
    params = params.merge("queue" => field(params["queue"])) unless raw || !params.key?("queue")
    post("/limits/#{action}", params, "HTTP_SEC_FETCH_SITE" => site)
  end

  def field(name) = Sidekiq::LimitFetch::Web::QueueField.encode(name)

  def page
    Nokogiri::HTML(last_response.body)
  end

  def row(name)
    page.css("tr.lf-queue").find { _1["data-queue"] == name } or
      raise "no row for queue #{name.inspect} in:\n#{last_response.body}"
  end

  def cell(name, css)
    row(name).at_css(css).text.split.join(" ")
  end

  def error_text
    page.at_css(".lf-error")&.text&.strip
  end

  def queue(name) = Sidekiq::LimitFetch.queue(name)

  it "adds a Limits tab to Sidekiq's navigation, in the visitor's language" do
    get "/"
    expect(last_response.status).to eq(200)
    expect(page.css("header .nav a").map { [_1.text.strip, _1["href"]] }).to include(["Limits", "/limits"])

    get "/", {}, "HTTP_ACCEPT_LANGUAGE" => "fr-FR,fr;q=0.9"
    expect(page.css("header .nav a").map(&:text).map(&:strip)).to include("Limites")
  end

  it "serves its stylesheet through the extension's assets, linked from the page with the CSP nonce" do
    get "/limits"
    link = page.css("head link[rel=stylesheet]").find { _1["href"].include?("limit_fetch/css/limits.css") }
    expect(link).not_to be_nil, "no stylesheet of the tab in:\n#{page.at_css("head")}"
    expect(link["nonce"]).to match(/\A\h{16}\z/)
    csp = last_response.headers["content-security-policy"]
    expect(csp).to include("style-src 'self' 'nonce-#{link["nonce"]}'")
    # no inline style or script of the tab's own
    expect(page.css("[style]")).to be_empty
    expect(page.css("style")).to be_empty
    expect(page.css("script").map { _1["src"] }).to all(end_with("javascripts/application.js"))

    get link["href"]
    expect(last_response.status).to eq(200)
    expect(last_response.headers["content-type"]).to start_with("text/css")
    expect(last_response.body).to include(".lf-bar")
  end

  it "shows each queue's running jobs against its limits, its backlog and who runs them" do
    config = build_config(queues: %w[webhooks mailers], limits: {"webhooks" => 2}, process_limits: {"webhooks" => 2},
      concurrency: 3)
    start_embedded(config)
    uuid = uuid_of(config.default_capsule)
    push_jobs("webhooks", 3, seconds: 10, gate: "web")
    push_jobs("mailers", 1, seconds: 10, gate: "web")
    wait_until(message: -> { "2 webhooks and 1 mailer to run: #{running("webhooks")}, #{running("mailers")}" }) do
      running("webhooks") == 2 && running("mailers") == 1
    end

    get "/limits"
    expect(last_response.status).to eq(200)
    expect(cell("webhooks", ".lf-figures")).to eq("2 / 2")
    expect(row("webhooks").at_css("svg.lf-bar.lf-full rect.lf-fill")["width"]).to eq("100")
    expect(cell("webhooks", ".lf-process-limit")).to eq("2")
    expect(cell("webhooks", ".lf-queued")).to eq("1")
    expect(cell("webhooks", ".lf-per-process")).to include(": 2 / 2")
    expect(cell("webhooks", ".lf-per-process")).to include(queue("webhooks").busy_by_process.keys.first)
    expect(cell("webhooks", ".lf-explain")).to eq(queue("webhooks").explain.to_s)
    expect(cell("webhooks", ".lf-explain")).not_to be_empty
    expect(cell("mailers", ".lf-figures")).to eq("1 / none")
    expect(row("mailers").at_css("svg.lf-bar")).to be_nil # no limit, no bar
    expect(cell("mailers", ".lf-process-limit")).to eq("none")
    expect(cell("webhooks", ".lf-parked")).to eq("0")
    expect(page.at_css(".lf-no-expired")).not_to be_nil
    expect(uuid).not_to be_nil
  ensure
    open_gate("web")
  end

  it "shows a queue's adaptive limit in force and its range" do
    setup_capsule(build_capsule(queues: %w[partner], limits: {"partner" => "1..20"}))
    redis.call("SET", queue_key("partner", "adaptive"), "7 1")

    get "/limits"
    expect(cell("partner", ".lf-figures")).to eq("0 / 7 (1..20)")
    expect(cell("partner", ".lf-explain")).to eq("adaptive 7 of 1..20: empty")
  end

  it "shows a fair queue's fair limit, its slots and its tenants' shares as the queue's" do
    name = LimitFetchSpec::ImportJob::QUEUE
    queue(name).fair_limit = 3
    3.times { LimitFetchSpec::ImportJob.perform_async("acme", 0) }
    LimitFetchSpec::ImportJob.perform_async("b", 0)
    LimitFetchSpec::PlainImportJob.perform_async(0)
    fetcher = fetcher_for(build_capsule(queues: [name], concurrency: 5))
    3.times { expect(fetcher.retrieve_work).not_to be_nil } # acme alone at first: all 3
    expect(fetcher.retrieve_work).to be_nil
    texts = ->(rows) { rows.map { |tr| tr.css("> td").map { _1.text.split.join(" ") } } }

    get "/limits"
    expect(cell(name, ".lf-figures")).to eq("3 / fair 3")
    expect(row(name).at_css("svg.lf-bar.lf-full")).not_to be_nil
    expect(cell(name, ".lf-explain")).to eq("fair 3, 3 tenants with work: at its fair limit 3/3")
    slots = page.css("table.lf-fair-queues tr.lf-fair-queue")
    expect(slots.map { [_1["data-queue"], _1.at_css(".lf-name").text, _1.at_css(".lf-running").text.split.join(" ")] })
      .to eq([[name, name, "3 / fair 3 shared fairly among its tenants with work: 3"]])
    expect(texts.call(slots.first.css("tr.lf-tenant")))
      .to eq([["acme", "3 of fair 1.0 of 3", "0"], ["LimitFetchSpec::PlainImportJob", "0 of fair 1.0 of 3", "1"],
              ["b", "0 of fair 1.0 of 3", "1"]])
    # elsewhere, a tenant's share names its queue; no class named "queue:imports"
    expect(texts.call(page.css("table.lf-class-limits tr.lf-class-limit")))
      .to eq([["LimitFetchSpec::PlainImportJob", "0 of fair 1.0 of 3 in queue imports", "none", "1", "–"]])
    expect(page.css("table.lf-scopes tr.lf-key").map { _1.at_css(".lf-running-limit").text })
      .to eq(["3 of fair 1.0 of 3 in queue imports · own limit 100",
              "0 of fair 1.0 of 3 in queue imports · own limit 100"])
    expect(last_response.body).not_to include("queue:#{name}")

    # its form sets its fair limit (no global limit); blank makes it no longer fair
    expect(row(name).xpath("following-sibling::tr[1]").css("form").map { _1["class"] })
      .to eq(["lf-form lf-set-fair-limit", "lf-form lf-set-process-limit", "lf-form lf-set-rate", "lf-form lf-pause"])
    expect(page.at_css("form.lf-set-fair-limit input[name=value]")["value"]).to eq("3")
    submit("fair_limit", {"queue" => name, "value" => "x"})
    expect([last_response.status, error_text])
      .to match([422, start_with(%(Nothing was changed: invalid fair_limit for queue "#{name}": "x"))])
    expect(queue(name).fair_limit).to eq(3)
    submit("fair_limit", {"queue" => name, "value" => " 5 "})
    expect([last_response.status, queue(name).fair_limit, queue(name).limit]).to eq([302, 5, nil])
    queue(name).limit = 10 # a limit set at run time besides: the bar against the lower
    get "/limits"
    expect(cell(name, ".lf-figures")).to eq("3 / 10, fair 5")
    expect(row(name).at_css("svg.lf-bar rect.lf-fill")["width"]).to eq("60")
    submit("fair_limit", {"queue" => name, "value" => ""})
    expect(queue(name).fair_limit).to be_nil
  end

  it "sets a queue's limit and process limit from the forms, and removes them when left blank" do
    queue("webhooks").limit = 5
    get "/limits"
    form = row_form("webhooks", "lf-set-limit")
    expect(form.at_css("input[name=value]")["value"]).to eq("5")
    expect(form.at_css("input[name=queue]")["value"]).to eq(field("webhooks"))

    submit("limit", {"queue" => "webhooks", "value" => "3"})
    expect(last_response.status).to eq(302)
    expect(last_response.headers["location"]).to end_with("/limits")
    expect(queue("webhooks").limit).to eq(3)
    follow_redirect!
    expect(cell("webhooks", ".lf-figures")).to eq("0 / 3")

    submit("process_limit", {"queue" => "webhooks", "value" => " 1 "})
    expect(last_response.status).to eq(302)
    expect(queue("webhooks").process_limit).to eq(1)

    submit("limit", {"queue" => "webhooks", "value" => "0"})
    expect(queue("webhooks").limit).to eq(0)

    submit("limit", {"queue" => "webhooks", "value" => ""})
    expect(last_response.status).to eq(302)
    expect(queue("webhooks").limit).to be_nil
    submit("process_limit", {"queue" => "webhooks", "value" => "  "})
    expect(queue("webhooks").process_limit).to be_nil
    expect(redis.call("EXISTS", queue_key("webhooks", "limit"), queue_key("webhooks", "process_limit"))).to eq(0)
  end

  it "sets, shows and removes a queue's rate, refusing a bad one; shows a key's rate and when it next starts" do
    push_jobs("webhooks", 1) # a queue Redis knows
    get "/limits"
    submit("rate", {"queue" => "webhooks", "value" => " 2/60 "})
    expect(last_response.status).to eq(302)
    expect(queue("webhooks").rate.to_s).to eq("2/60")
    follow_redirect!
    expect(cell("webhooks", ".lf-rate")).to eq("0 / 2 per 60 s")
    expect(row_form("webhooks", "lf-set-rate").at_css("input[name=value]")["value"]).to eq("2/60")
    %w[2 0/60 2/0.01 abc].each do |bad|
      submit("rate", {"queue" => "webhooks", "value" => bad})
      expect(last_response.status).to eq(422), "#{bad}: #{last_response.status}"
      expect(error_text).to start_with("Nothing was changed: invalid rate for queue \"webhooks\": #{bad.inspect}")
    end
    expect(queue("webhooks").rate.to_s).to eq("2/60")
    submit("rate", {"queue" => "webhooks", "value" => ""})
    expect(queue("webhooks").rate).to be_nil

    limit = Sidekiq::LimitFetch::JobLimit.for(LimitFetchSpec::TenantRatedJob, key: "acme")
    limit.rate = "1/60"
    2.times { LimitFetchSpec::TenantRatedJob.perform_async("acme", 0) }
    start_embedded(build_config(queues: [LimitFetchSpec::KeyedJobs::QUEUE], concurrency: 2))
    wait_until(message: "one parked") { limit.parked == 1 }
    get "/limits"
    scope = page.css("table.lf-scopes tr.lf-scope").find { _1.at_css("code").text == "LimitFetchSpec::TenantRatedJob" }
    expect(scope).not_to be_nil, page.at_css("table.lf-scopes")&.to_html
    key = scope.at_css("tr.lf-key").css("td").map { _1.text.split.join(" ") }
    expect(key).to match(["acme", "0 / none", %r{\A1 / 1 per 60 s · next in (59|60)\.\d s\z}, "1", "–"])
  end

  def row_form(name, css)
    page.at_css(%(tr.lf-change[data-queue="#{name}"] form.#{css}))
  end

  it "refuses a bad limit with a message on the page, changing nothing" do
    queue("webhooks").limit = 4
    queue("webhooks").process_limit = 2
    {
      "-1" => "invalid limit for queue \"webhooks\": \"-1\"",
      "abc" => "\"abc\"",
      "2.5" => "\"2.5\"",
      "1e3" => "\"1e3\"",
      "9007199254740992" => "up to 9007199254740991"
    }.each do |value, message|
      submit("limit", {"queue" => "webhooks", "value" => value})
      expect(last_response.status).to eq(422), "#{value.inspect}: #{last_response.status}"
      expect(error_text).to start_with("Nothing was changed: invalid limit for queue \"webhooks\"")
      expect(error_text).to include(message)
      expect(cell("webhooks", ".lf-figures")).to eq("0 / 4") # the page, as it is
    end
    submit("process_limit", {"queue" => "webhooks", "value" => "-3"})
    expect(last_response.status).to eq(422)
    expect(error_text).to include("invalid process_limit for queue \"webhooks\": \"-3\"")
    submit("limit", {"queue" => "", "value" => "3"}, raw: true)
    expect(error_text).to eq("Nothing was changed: no queue named in the form")
    submit("limit", {"queue" => [field("webhooks")], "value" => "3"}, raw: true)
    expect(last_response.status).to eq(422)
    expect(error_text).to include("the queue must be one value")
    submit("limit", {"queue" => "webhooks", "value" => "\xFF".b})
    expect(last_response.status).to eq(422)

    expect(queue("webhooks").limit).to eq(4)
    expect(queue("webhooks").process_limit).to eq(2)
  end

  it "pauses a queue for a time or until unpaused, keeping its limit, and unpauses it" do
    queue("reports").limit = 2
    get "/limits"
    expect(row_form("reports", "lf-pause")).not_to be_nil

    submit("pause", {"queue" => "reports", "for" => "5", "unit" => "minutes"})
    expect(last_response.status).to eq(302)
    expect(queue("reports")).to be_paused
    expect(queue("reports").paused_until).to be_within(5).of(Time.now + 300)
    expect(queue("reports").limit).to eq(2)
    follow_redirect!
    expect(row("reports").at_css(".lf-paused")).not_to be_nil
    # until when, once, as the explanations say it
    expect(row("reports").css(".lf-time").map(&:text)).to eq([queue("reports").paused_until.utc.strftime("%H:%M:%SZ")])
    expect(row("reports").at_css(".lf-time")["title"]).to eq(queue("reports").paused_until.utc.iso8601)
    expect(cell("reports", ".lf-explain")).to eq(queue("reports").explain.to_s)
    expect(row_form("reports", "lf-unpause")).not_to be_nil

    submit("unpause", {"queue" => "reports"})
    expect(last_response.status).to eq(302)
    expect(queue("reports")).not_to be_paused

    submit("pause", {"queue" => "reports", "for" => "", "unit" => "minutes"})
    expect(queue("reports")).to be_paused
    expect(queue("reports").paused_until).to be_nil
    follow_redirect!
    expect(row("reports").at_css(".lf-paused")).not_to be_nil
    expect(row("reports").at_css(".lf-time")).to be_nil
    expect(cell("reports", ".lf-explain")).to eq("paused until unpaused")
    submit("unpause", {"queue" => "reports"})
    expect(queue("reports")).not_to be_paused
  end

  it "refuses a bad pause duration with a message on the page, changing nothing" do
    queue("reports").limit = 2
    bad = [%w[0 minutes], %w[-5 minutes], %w[ten minutes], %w[1.5 hours], %w[9000 hours], %w[5 fortnights]]
    bad.each do |amount, unit|
      submit("pause", {"queue" => "reports", "for" => amount, "unit" => unit})
      expect(last_response.status).to eq(422), "#{amount} #{unit}: #{last_response.status}"
      expect(error_text).to match(/\ANothing was changed: invalid pause (duration|unit) /)
      expect(queue("reports")).not_to be_paused
    end
    expect(error_text).to include("\"fortnights\"")
  end

  it "names each queue in its forms so that any name comes back, and refuses a queue Redis does not know" do
    names = ["a\nb", "a\r\nb", "tab\there", " ", "emoji \u{1F6A6}", "quote\" <b>&amp;", "q" * 300]
    names.each { queue(_1).limit = 1 }
    get "/limits"
    # one field value per queue, in all its forms (an HTML parser reads a
    # CR LF in an attribute as LF: the names are told by the fields)
    fields = page.css("tr.lf-change").map { |tr| tr.css("input[name=queue]").map { _1["value"] }.uniq }
    expect(fields).to all(match([/\A[A-Za-z0-9_-]+\z/]))
    expect(fields.flatten.map { Sidekiq::LimitFetch::Web::QueueField.decode(_1) }).to match_array(names)

    names.each_with_index do |name, index|
      submit("limit", {"queue" => name, "value" => (index + 2).to_s})
      expect(last_response.status).to eq(302), "#{name.inspect}: #{last_response.status} #{error_text}"
    end
    expect(names.map { queue(_1).limit }).to eq((2..(names.size + 1)).to_a)

    before = limit_fetch_keys
    {
      "gone" => "Nothing was changed: Redis knows no queue \"gone\" (removed since the page was shown?)",
      "\xFF".b => "Nothing was changed: the queue in the form is not valid UTF-8: \"\\xFF\""
    }.each do |name, message|
      submit("limit", {"queue" => name, "value" => "3"}, raw: false)
      expect(last_response.status).to eq(422)
      expect(error_text).to eq(message)
    end
    %w[webhooks a+b a/b YR =].each do |raw| # a name as it is, or what no page sent
      submit("pause", {"queue" => raw, "for" => "", "unit" => "minutes"}, raw: true)
      expect(last_response.status).to eq(422), "#{raw}: #{last_response.status}"
      expect(error_text).to match(/\ANothing was changed: (the queue in the form is not|Redis knows no queue)/)
    end
    expect(limit_fetch_keys).to eq(before)
  end

  it "shows a job limit's back-off and an adaptive limit in force; Resume ends the back-off" do
    capsule = build_capsule(queues: [LimitFetchSpec::BackOffJobs::QUEUE], concurrency: 5)
    2.times { LimitFetchSpec::AdaptiveCallJob.perform_async("acme", 4, 0) }
    fetcher = fetcher_for(capsule)
    expect(fetcher.retrieve_work).not_to be_nil # the other parked: the limit in force is its floor, 1
    expect(fetcher.retrieve_work).to be_nil
    limit = Sidekiq::LimitFetch::JobLimit.for(LimitFetchSpec::AdaptiveCallJob, key: "acme")
    limit.back_off(60)

    get "/limits"
    scope = page.css("table.lf-scopes tr.lf-scope").find { _1.at_css("code").text == "LimitFetchSpec::AdaptiveCallJob" }
    expect(scope).not_to be_nil, page.at_css("table.lf-scopes")&.to_html
    key = scope.at_css("tr.lf-key").css("td").map { _1.text.split.join(" ") }
    expect(key).to match(["acme", "1 / adaptive 1 of 1..6", "none", "1",
                          /\Abacking off, (59|60)\.\d s left \(from the console\)\z/])
    form = scope.at_css("tr.lf-key form.lf-resume")
    expect(form["action"]).to eq("/limits/resume")
    expect(form.at_css("input[type=submit]")["value"]).to eq("Resume")

    submit("resume", {"limit" => "not base64!"})
    expect([last_response.status, error_text]).to eq([422, "Nothing was changed: the job limit in the form is not " \
                                                           "one this page sent: \"not base64!\""])
    submit("resume", {"limit" => ["a"]})
    expect([last_response.status, error_text]).to eq([422, "Nothing was changed: the job limit must be one value, " \
                                                           "got [\"a\"]"])
    submit("resume", {"limit" => form.at_css("input[name=limit]")["value"]}, site: "cross-site")
    expect([last_response.status, limit.back_off_state]).to match([403, be_a(Sidekiq::LimitFetch::BackOffState)])

    submit("resume", {"limit" => form.at_css("input[name=limit]")["value"]})
    expect(last_response.status).to eq(302)
    expect(limit.back_off_state).to be_nil
    follow_redirect!
    expect(page.at_css("table.lf-scopes form.lf-resume")).to be_nil
  end

  it "refuses a cross-site POST: nothing changes" do
    queue("webhooks").limit = 4
    %w[cross-site same-site none].each do |site|
      submit("limit", {"queue" => "webhooks", "value" => "1"}, site: site)
      expect(last_response.status).to eq(403)
      submit("pause", {"queue" => "webhooks", "for" => "", "unit" => "minutes"}, site: site)
      expect(last_response.status).to eq(403)
    end
    post "/limits/limit", {"queue" => "webhooks", "value" => "1"} # no Sec-Fetch-Site at all
    expect(last_response.status).to eq(403)

    expect(queue("webhooks").limit).to eq(4)
    expect(queue("webhooks")).not_to be_paused
  end

  it "refreshes itself every ?refresh= seconds when asked, with a Refresh header and no script" do
    get "/limits", {"refresh" => "5"}
    expect(last_response.headers["refresh"]).to eq("5")
    expect(page.at_css(".lf-refresh strong").text).to eq("5 s")
    %w[0 61 abc 5.5].each do |bad|
      get "/limits", {"refresh" => bad}
      expect(last_response.status).to eq(200)
      expect(last_response.headers).not_to have_key("refresh")
    end
  end

  it "lists capsules whose heartbeat expired, waiting to be reaped" do
    Sidekiq::LimitFetch.configuration[:heartbeat_period] = 60 # no beat during the example
    capsule = build_capsule(queues: %w[webhooks], limits: {"webhooks" => 1})
    setup_capsule(capsule)
    uuid = uuid_of(capsule)
    get "/limits"
    expect(page.at_css(".lf-no-expired")).not_to be_nil

    redis.call("DEL", heartbeat_key(uuid)) # as when its process died a heartbeat expiry ago
    get "/limits"
    rows = page.css("table.lf-capsules tr.lf-capsule")
    expect(rows.map { _1.at_css(".lf-uuid").text }).to eq([uuid])
    expect(rows.first.css("td").map { _1.text.split.join(" ") })
      .to eq([Sidekiq::LimitFetch.capsules.first.identity, "default #{uuid}", "webhooks"])
  end

  it "shows keyed scopes with their busiest keys: running, parked and limit" do
    keyed = LimitFetchSpec::KeyedJobs::QUEUE
    odd = %(odd "q"\n) # written escaped in a payload
    config = build_config(queues: [keyed, odd], concurrency: 5) # strictly in this order
    config[:timeout] = 1 # the jobs still running at the end are pushed back after 1 s
    Sidekiq::LimitFetch::JobLimit.for(LimitFetchSpec::SyncJob, key: "t2").limit = 2
    3.times { LimitFetchSpec::SyncJob.perform_async("t1", 3) }
    LimitFetchSpec::SyncJob.set(queue: odd).perform_async("t1", 3)
    2.times { LimitFetchSpec::SyncJob.perform_async("t2", 3) }
    LimitFetchSpec::ExportJob.perform_async(3)
    start_embedded(config)
    wait_until(message: -> { Sidekiq::LimitFetch::JobLimit.active.map(&:to_h).inspect }) do
      states = Sidekiq::LimitFetch::JobLimit.active.to_h { [_1.id, _1.to_h.values_at(:running, :parked)] }
      states["key:LimitFetchSpec::SyncJob#t1"] == [1, 3] && states["key:LimitFetchSpec::SyncJob#t2"] == [2, 0] &&
        states["class:LimitFetchSpec::ExportJob"] == [1, 0]
    end

    get "/limits"
    scope = page.css("table.lf-scopes tr.lf-scope").find { _1.at_css("code").text == "LimitFetchSpec::SyncJob" }
    expect(scope).not_to be_nil, page.at_css("table.lf-scopes")&.to_html
    expect(scope.css("> td.num").map(&:text)).to eq(%w[2 3 3]) # keys, running, parked
    keys = scope.css("tr.lf-key").map { |key| key.css("td").map { _1.text.strip } }
    # the limit in force: stored, else the default the jobs carry (t1's
    # parked jobs, ExportJob's running one)
    expect(keys).to eq([["t2", "2 / 2", "none", "0", "–"], ["t1", "1 / 1 (default)", "none", "3", "–"]])
    export = page.css("table.lf-class-limits tr.lf-class-limit").map do |tr|
      tr.css("td").map { _1.text.split.join(" ") }
    end
    expect(export).to eq([["LimitFetchSpec::ExportJob", "1 / 2 (default)", "none", "0", "–"]])
    # each queue's parked jobs, and what they wait for
    expect([keyed, odd].map { |name| [cell(name, ".lf-queued"), cell(name, ".lf-parked")] }).to eq([%w[0 2], %w[0 1]])
    expect(cell(odd, ".lf-explain")).to eq("none queued: 1 parked until their job limits have room")

    # a limit's parked jobs beyond Waiting::BUDGET are counted for the queue
    # of its oldest: marked as estimated
    stub_const("Sidekiq::LimitFetch::Waiting::BUDGET", 2)
    get "/limits"
    expect([keyed, odd].sum { cell(_1, ".lf-parked").delete_prefix("~").to_i }).to eq(3)
    expect([keyed, odd].map { cell(_1, ".lf-parked") }).to all(start_with("~"))
  end
end
