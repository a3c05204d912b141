-- Each connection waits PACE_MS milliseconds (default 40) between requests:
-- 16 connections then offer at most 16 * 1000 / PACE_MS requests/s.
-- With PACE_JITTER (a fraction, default 0) each wait is drawn evenly from
-- PACE_MS * (1 - PACE_JITTER) to PACE_MS * (1 + PACE_JITTER), the same on
-- average: wrk's timers count whole milliseconds, so connections with equal
-- waits that fall into step send within a fraction of a millisecond of each
-- other for as long as they stay in step, and the one behind waits for the
-- other's request on every turn; drawn waits keep them from locking.
-- With LATENCY_OUT set, the run's latency histogram is written there, a
-- "microseconds count" line per value met, so that runs can be pooled.
local pace = tonumber(os.getenv("PACE_MS") or "40")
local jitter = tonumber(os.getenv("PACE_JITTER") or "0")
local histogram_path = os.getenv("LATENCY_OUT")
local threads = 0

function setup(thread)
   threads = threads + 1
   thread:set("seed", threads)
end

function init(args)
   math.randomseed(os.time() * 1000 + seed)
end

function delay()
   return pace * (1 - jitter + 2 * jitter * math.random())
end

function done(summary, latency, requests)
   if not histogram_path then
      return
   end
   local out = assert(io.open(histogram_path, "w"))
   for i = 1, #latency do
      local value, count = latency(i)
      out:write(string.format("%d %d\n", value, count))
   end
   out:close()
end
