# frozen_string_literal: true

module Sidekiq
  class LimitFetch < BasicFetch
    module Web
      # The jobs parked at a full job limit, counted by the queue each goes
      # back to: a queue whose jobs all wait parked has none queued, yet
      # jobs waiting. Read in one script, as the fetch reads a parked job's
      # queue (src/lua/prelude.lua's job_queue); the keys are src/keys.rs's
      # PARKED and parked(id). It reads at most BUDGET jobs, which bounds
      # the time it holds Redis: beyond, the counts are of those it read
      # (#complete? is false).
      class ParkedCounts
        BUDGET = 100_000
        SLICE = 1_000
        PARKED = "sidekiq:limit_fetch:parked"

        SCRIPT = <<~'LUA'
          local budget, slice = tonumber(ARGV[1]), tonumber(ARGV[2])
          local first = '{"limit_fetch":'
          local function queue_of(job)
            if string.sub(job, 1, #first) == first then
              local array = string.match(job, '^%b[]', #first + 1)
              local name = array and string.match(job, '^,"queue":"([^"\\]*)"', #first + #array + 1)
              if name then return name end
            end
            local ok, parsed = pcall(cjson.decode, job)
            if ok and type(parsed) == 'table' and type(parsed.queue) == 'string' then return parsed.queue end
          end
          local counts, complete = {}, 1
          for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
            local key = 'sidekiq:limit_fetch:limit:' .. id .. ':parked'
            local len = redis.call('LLEN', key)
            if len > budget then complete, len = 0, budget end
            budget = budget - len
            for from = 0, len - 1, slice do
              for _, job in ipairs(redis.call('LRANGE', key, from, math.min(from + slice, len) - 1)) do
                local name = queue_of(job)
                if name then counts[name] = (counts[name] or 0) + 1 end
              end
            end
          end
          local out = {complete}
          for name, count in pairs(counts) do out[#out + 1] = name; out[#out + 1] = count end
          return out
        LUA

        # Counts on the Redis of +config+ (Sidekiq's client's by default,
        # as the console API).
        def self.read(config = Sidekiq.default_configuration)
          complete, *pairs = config.redis { |conn| conn.call("EVAL", SCRIPT, 1, PARKED, BUDGET, SLICE) }
          new(pairs.each_slice(2).to_h { |name, count| [name.dup.force_encoding(Encoding::UTF_8), count] },
            complete: complete == 1)
        end

        def initialize(counts, complete: true)
          @counts = counts
          @complete = complete
        end

        # Parked jobs of queue +name+.
        def [](name)
          @counts.fetch(name, 0)
        end

        def complete? = @complete
      end
    end
  end
end
