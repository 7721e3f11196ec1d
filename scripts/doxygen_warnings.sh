#!/usr/bin/env bash
# Counts the API reference's doxygen warnings per file, most first, and in total:
#
#   bash scripts/doxygen_warnings.sh            # runs doxygen docs/Doxyfile, then counts
#   bash scripts/doxygen_warnings.sh --no-run   # counts the log of the last run
#
# The log is build/docs/warnings.log (docs/Doxyfile, WARN_LOGFILE). A warning is a line
# "FILE:LINE: warning|error: ..." or "warning|error: ..."; continuation lines (parameter
# lists) are not counted.
# Exit status: 0 when there is no warning, 1 otherwise, 2 on bad usage.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
LOG=build/docs/warnings.log

case "${1:-}" in
  "") mkdir -p build/docs
      rm -f "$LOG"
      doxygen docs/Doxyfile >/dev/null 2>&1 || true ;;
  --no-run) ;;
  -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
  *) echo "doxygen_warnings: unknown option '$1'" >&2; exit 2 ;;
esac
if [[ ! -f $LOG ]]; then
  echo "doxygen_warnings: no $LOG (run without --no-run, or doxygen docs/Doxyfile)" >&2
  exit 2
fi

# Warnings without a place ("error: ...", e.g. about a graph) count under "(no file)".
counts=$( { grep -E '^[^ ][^:]*:[0-9]+: (warning|error): ' "$LOG" | cut -d: -f1 | sed "s|^$ROOT/||"
            grep -E '^(warning|error): ' "$LOG" | sed 's/.*/(no file)/'; } |
         sort | uniq -c | sort -k1,1nr -k2 || true)
total=0
if [[ -n $counts ]]; then
  printf '%s\n' "$counts"
  total=$(awk '{s += $1} END {print s + 0}' <<<"$counts")
fi
echo "total: $total warnings in $( [[ -n $counts ]] && wc -l <<<"$counts" || echo 0) files"
(( total == 0 ))
