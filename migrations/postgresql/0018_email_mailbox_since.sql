-- The e-mail channel: when the reading of a channel's mailbox began, kept
-- for a mailbox set on an existing channel (another host or account), so
-- that its first poll reads the mail that arrived since then, not since the
-- channel was created.

ALTER TABLE "email_mailbox" ADD COLUMN "since" TIMESTAMP;
