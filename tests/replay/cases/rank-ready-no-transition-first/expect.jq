# rule 6: a ready pod without Ready lastTransitionTime counts as ready for the least time (afterOrZero): it goes first
include "replay";
ops == ["delete", "status", "end"] and deleted == ["web-b"]
