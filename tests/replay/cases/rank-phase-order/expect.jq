# rule 2: Pending before Unknown before Running, whatever the ages
include "replay";
ops == ["delete", "status", "end"] and deleted == ["web-p", "web-u"]
