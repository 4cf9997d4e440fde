#!/bin/bash
# hold-relay.sh MARK HOLD: copies lines from stdin to stdout. After the
# first line that contains MARK it creates the file HOLD, and holds every
# later line back for as long as HOLD exists: a watch stream that stops
# short of what came after MARK, as a slow informer would.
mark=$1 hold=$2 armed=1
while IFS= read -r line; do
  while [ -z "$armed" ] && [ -e "$hold" ]; do sleep 0.05; done
  printf '%s\n' "$line"
  if [ -n "$armed" ] && [[ $line == *"$mark"* ]]; then
    : >"$hold"
    armed=
  fi
done
