# In with no values is an invalid selector: end only
include "replay";
ops == ["end"]
