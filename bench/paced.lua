-- Each connection waits PACE_MS milliseconds (default 40) between requests:
-- 16 connections then offer at most 16 * 1000 / PACE_MS requests/s.
local pace = tonumber(os.getenv("PACE_MS") or "40")

function delay()
   return pace
end
