#!/bin/bash
# hold-relay.sh MARK HOLD [ONLY]: copies lines from stdin to stdout. After
# the first line that contains MARK it creates the file HOLD, and holds
# every later line back for as long as HOLD exists: a watch stream that
# stops short of what came after MARK, as a slow informer would. With
# ONLY, only the lines that contain ONLY are held (in their order) and the
# others go through: one resource's informer behind, the others not.
mark=$1 hold=$2 only=${3:-} armed=1
if [ -z "$only" ]; then
  while IFS= read -r line; do
    while [ -z "$armed" ] && [ -e "$hold" ]; do sleep 0.05; done
    printf '%s\n' "$line"
    if [ -n "$armed" ] && [[ $line == *"$mark"* ]]; then
      : >"$hold"
      armed=
    fi
  done
  exit 0
fi
# ONLY: read with a timeout, so that held lines go out once HOLD is gone
# even when nothing else comes; a read cut by the timeout keeps its part.
held=() part= eof=
flush() { [ ${#held[@]} -gt 0 ] && printf '%s\n' "${held[@]}"; held=(); }
while [ -z "$eof" ] || [ ${#held[@]} -gt 0 ]; do
  [ -z "$armed" ] && [ ! -e "$hold" ] && flush
  [ -n "$eof" ] && { sleep 0.05; continue; }
  if IFS= read -r -t 0.05 chunk; then
    line=$part$chunk part=
  else
    [ $? -gt 128 ] && { part=$part$chunk; continue; }
    eof=1 line=$part$chunk part=
    [ -z "$line" ] && continue
  fi
  if [ -z "$armed" ] && [ -e "$hold" ] && [[ $line == *"$only"* ]]; then
    held+=("$line")
  else
    printf '%s\n' "$line"
  fi
  if [ -n "$armed" ] && [[ $line == *"$mark"* ]]; then
    : >"$hold"
    armed=
  fi
done
