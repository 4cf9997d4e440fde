# a pod recreated under the same name (MODIFIED with a new UID) replaces the old one: the delete names the new UID
include "replay";
ops == ["delete", "status", "end"]
and one("delete").pods == [{name: "web-a", uid: "uid-web-a-2"}]
