# a matchLabels value that is not a valid label value is an invalid selector: end only
include "replay";
ops == ["end"]
