# rule 1: an unassigned pod goes before an assigned one, even a Running ready older one before a Pending newer one
include "replay";
ops == ["delete", "status", "end"] and deleted == ["web-u"]
