# a key never seen: end only, without owner
include "replay";
ops == ["end"] and (fin | has("owner") | not) and fin.key == "ns/nothere"
