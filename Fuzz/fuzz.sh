#!/usr/bin/env bash
# Builds the libFuzzer targets and runs each for a bounded time (`make fuzz`).
#
#   Fuzz/fuzz.sh [target ...]      default: frame json request actions http proxy websocket
#
# Environment:
#   FUZZ_SECONDS   seconds per target (default 60), libFuzzer -max_total_time
#   FUZZ_OUT       where crashes, the grown corpora and logs go
#                  (default .build-fuzz/out, outside git)
#   FUZZ_ARGS      extra libFuzzer flags, e.g. "-max_len=8192"
#   SWIFT          the swift driver (default: swift)
#
# The checks (Fuzz/Checks, module OutaTimeFuzzChecks) and the modules they
# test (OutaTimeProtocol, OutaTimeDomain, swift-collections' HeapModule) are
# compiled by SwiftPM with --sanitize fuzzer into their own scratch path,
# .build-fuzz, so the normal .build never sees the sanitizer; each
# Fuzz/Targets/<name>.swift is then linked against them with swiftc
# -sanitize=fuzzer, which brings libFuzzer's main. Each target starts from
# Fuzz/corpus/<name> (committed seeds) plus what earlier runs found
# ($FUZZ_OUT/corpus/<name>). Exits 1 if any target crashed; the crashing
# inputs are in $FUZZ_OUT/crashes/<name>/ (replay one with
# `.build-fuzz/fuzz-<name> FILE`).
set -euo pipefail

cd "$(dirname "$0")/.."
SWIFT=${SWIFT:-swift}
SWIFTC=${SWIFTC:-$(dirname "$(command -v "$SWIFT")")/swiftc}
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
FUZZ_OUT=${FUZZ_OUT:-.build-fuzz/out}
FUZZ_ARGS=${FUZZ_ARGS:-}
SCRATCH=.build-fuzz
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(frame json request actions http proxy websocket)

echo "fuzz: building OutaTimeFuzzChecks with --sanitize fuzzer (release) in $SCRATCH"
"$SWIFT" build --scratch-path "$SCRATCH" -c release --sanitize fuzzer --target OutaTimeFuzzChecks

BIN=$SCRATCH/release
MODULES=(InternalCollectionsUtilities HeapModule OutaTimeProtocol OutaTimeDomain OutaTimeFuzzChecks)
OBJECTS=()
for module in "${MODULES[@]}"; do
  while IFS= read -r -d '' object; do OBJECTS+=("$object"); done \
    < <(find "$BIN/$module.build" -name '*.o' -print0)
done

for target in "${TARGETS[@]}"; do
  source=Fuzz/Targets/$target.swift
  [ -f "$source" ] || { echo "fuzz: no target '$target' (Fuzz/Targets/*.swift)" >&2; exit 2; }
  echo "fuzz: linking $SCRATCH/fuzz-$target"
  "$SWIFTC" -O -sanitize=fuzzer -parse-as-library -module-name "fuzz_$target" \
    -I "$BIN/Modules" "$source" "${OBJECTS[@]}" -o "$SCRATCH/fuzz-$target"
done

# Let libFuzzer's own handler catch a trap and save the input, not Swift's backtracer.
export SWIFT_BACKTRACE=enable=no
status=0
for target in "${TARGETS[@]}"; do
  corpus=$FUZZ_OUT/corpus/$target
  crashes=$FUZZ_OUT/crashes/$target
  log=$FUZZ_OUT/logs/$target.log
  mkdir -p "$corpus" "$crashes" "$(dirname "$log")"
  echo "fuzz: $target for ${FUZZ_SECONDS}s (corpus $corpus, crashes $crashes, log $log)"
  # shellcheck disable=SC2086
  if "$SCRATCH/fuzz-$target" -max_total_time="$FUZZ_SECONDS" -print_final_stats=1 \
       -artifact_prefix="$crashes/" $FUZZ_ARGS "$corpus" "Fuzz/corpus/$target" >"$log" 2>&1; then
    grep -E '^(stat::number_of_executed_units|Done)' "$log" | sed "s/^/fuzz: $target: /"
  else
    status=1
    echo "fuzz: $target CRASHED; the input is in $crashes/, the log in $log:" >&2
    grep -E -A12 'Fatal error|ERROR: libFuzzer|==ERROR' "$log" | head -40 >&2 || tail -40 "$log" >&2
  fi
done
exit $status
