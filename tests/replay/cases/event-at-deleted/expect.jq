# a deleted controller's last end carries the earliest event not acted on: its ADDED
include "replay";
ops == ["end"] and (fin | has("owner") | not)
and fin.event_at == ("2026-01-01T00:09:30Z" | fromdateiso8601)
