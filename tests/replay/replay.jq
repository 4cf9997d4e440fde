# replay.jq: helpers for the expect.jq programs of tests/replay/cases.
# Input: the array of intents (jq -s). Every expect.jq begins with
# `include "replay";` and is run as: jq -s -L tests/replay -f expect.jq

# the ops in order
def ops: map(.op);
def only($op): map(select(.op == $op));
# the single intent of an op; an error (so the case fails) unless exactly one
def one($op): only($op)
	| if length == 1 then .[0]
	  else error("expected one \($op) intent, got \(length)") end;
def fin: one("end");
def count: one("create").count;
# names of the pods in the delete intent, in its order
def deleted: one("delete").pods | map(.name);
def adopted: only("adopt") | map(.pod.name) | sort;
def released: only("release") | map(.pod.name) | sort;
def status: one("status").object.status;
def old_status: one("status").old_status;
def abs: if . < 0 then -. else . end;
def near($a; $b): (($a - $b) | abs) < 0.0005;
def no_requeue: fin | has("requeue_after") | not;
def requeue: fin.requeue_after;
# the owner every intent but an ownerless end carries
def owner_is($kind; $uid): all(.[]; .owner.kind == $kind and .owner.uid == $uid);
# a status object has exactly these fields (any order)
def fields($names): (keys | sort) == ($names | sort);
# a pod name appears nowhere in the intents' pod references
def untouched($name): all(.[]; (.pod.name // "") != $name
	and ((.pods // []) | map(.name) | index($name)) == null);
