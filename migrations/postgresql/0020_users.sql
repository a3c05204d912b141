-- The people of a workspace who sign in to the inbox at /app (issue 39):
-- their accounts (e-mail unique across the instance), sessions (only the
-- hash of the cookie's token), one-time sign-in links (hashed, expiring,
-- single use) and failed sign-ins (the attempt limit survives a restart).

CREATE TABLE "workspace_user" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "created_at" TIMESTAMP NOT NULL,
    "updated_at" TIMESTAMP NOT NULL,
    "workspace_id" TEXT NOT NULL,
    "email" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "role" TEXT NOT NULL,
    "password_hash" TEXT,
    "is_active" BOOLEAN NOT NULL,
    "last_sign_in_at" TIMESTAMP,
    FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE
);
CREATE INDEX "workspace_user_workspace_id" ON "workspace_user" ("workspace_id");
CREATE UNIQUE INDEX "workspace_user_email" ON "workspace_user" ("email");
CREATE INDEX "workspace_user_workspace_id_created_at_id" ON "workspace_user" ("workspace_id", "created_at", "id");

CREATE TABLE "user_session" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "user_id" TEXT NOT NULL,
    "token_hash" TEXT NOT NULL,
    "csrf_token" TEXT NOT NULL,
    "created_at" TIMESTAMP NOT NULL,
    "last_seen_at" TIMESTAMP NOT NULL,
    "expires_at" TIMESTAMP NOT NULL,
    FOREIGN KEY ("user_id") REFERENCES "workspace_user" ("id") ON DELETE CASCADE
);
CREATE INDEX "user_session_user_id" ON "user_session" ("user_id");
CREATE UNIQUE INDEX "user_session_token_hash" ON "user_session" ("token_hash");

CREATE TABLE "sign_in_link" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "user_id" TEXT NOT NULL,
    "token_hash" TEXT NOT NULL,
    "purpose" TEXT NOT NULL,
    "created_at" TIMESTAMP NOT NULL,
    "expires_at" TIMESTAMP NOT NULL,
    "used_at" TIMESTAMP,
    FOREIGN KEY ("user_id") REFERENCES "workspace_user" ("id") ON DELETE CASCADE
);
CREATE INDEX "sign_in_link_user_id" ON "sign_in_link" ("user_id");
CREATE UNIQUE INDEX "sign_in_link_token_hash" ON "sign_in_link" ("token_hash");

CREATE TABLE "sign_in_failure" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "kind" TEXT NOT NULL,
    "subject" TEXT NOT NULL,
    "created_at" TIMESTAMP NOT NULL
);
CREATE INDEX "sign_in_failure_kind_subject_created_at" ON "sign_in_failure" ("kind", "subject", "created_at");
