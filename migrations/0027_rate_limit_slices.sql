-- A rate limit's window in the database (models/rate_limits.py) holds
-- slices of the window (number, count, last hit) instead of every hit's
-- time. Windows last one window's length: those in the old form are
-- forgotten, as a restart forgets the windows kept in memory.
DELETE FROM "rate_limit_window";
