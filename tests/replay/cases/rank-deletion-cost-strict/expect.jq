# upstream rejects a deletion cost with a plus sign, leading zeros or blanks (validFirstDigit + ParseInt): +5, 007 and ' 3' count as 0, so those three go before cost 1
include "replay";
ops == ["delete", "status", "end"] and (deleted | sort) == ["web-a", "web-b", "web-d"]
