-- Each connection waits 40 ms between requests: 16 connections offer at most
-- 400 requests/s, below what the service saturates at.
function delay()
   return 40
end
