# events without "at" (a recording older than it): no event_at on the end, sent_at all the same
include "replay";
ops == ["status", "end"]
and (fin | has("event_at") | not)
and fin.sent_at == ("2026-01-01T00:10:00Z" | fromdateiso8601)
