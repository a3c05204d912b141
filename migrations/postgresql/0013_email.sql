-- The e-mail channel: where each channel's mailbox poll stands (IMAP
-- UIDVALIDITY and the highest UID read), so a restart neither loses nor
-- repeats a mail.

CREATE TABLE "email_mailbox" (
    "channel_id" TEXT NOT NULL PRIMARY KEY,
    "uidvalidity" BIGINT NOT NULL,
    "last_uid" BIGINT NOT NULL,
    "polled_at" TIMESTAMP NOT NULL,
    FOREIGN KEY ("channel_id") REFERENCES "channel" ("id") ON DELETE CASCADE
);
