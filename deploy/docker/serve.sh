#!/bin/sh
# The image's default command: on SQLite, create or migrate the database, then serve (as
# `npm start` does). On PostgreSQL the schema is migrated once per release by
# `svc-notifications-cmd dbsync`, run from the same image before the instances start: the
# server refuses an out-of-date schema and says so.
set -e
case "${NOTIFICATIONS_DATABASE_URL:-}" in
  sqlite:*) svc-notifications-cmd dbsync ;;
esac
exec svc-notifications "$@"
