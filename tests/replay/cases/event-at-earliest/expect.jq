# the end carries the "at" of the earliest event that queued the key (web-a's, fraction kept), not of an event for another controller, nor of one without "at"; sent_at is --now
include "replay";
ops == ["status", "end"]
and fin.event_at == ("2026-01-01T00:09:40Z" | fromdateiso8601) + 0.5
and fin.sent_at == ("2026-01-01T00:10:00Z" | fromdateiso8601)
