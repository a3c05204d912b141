-- Each connection waits PACE_MS milliseconds (default 40) between requests:
-- 16 connections then offer at most 16 * 1000 / PACE_MS requests/s.
-- With LATENCY_OUT set, the run's latency histogram is written there, a
-- "microseconds count" line per value met, so that runs can be pooled.
local pace = tonumber(os.getenv("PACE_MS") or "40")
local histogram_path = os.getenv("LATENCY_OUT")

function delay()
   return pace
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
