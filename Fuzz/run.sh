#!/usr/bin/env bash
# The fuzz targets, for the Makefile (docs/fuzzing.md):
#   Fuzz/run.sh check          builds every target, runs each over its committed corpus and then 5 more
#                              seconds; fails on any crash, leak, sanitizer report or timeout (`make fuzz-check`)
#   Fuzz/run.sh fuzz SECONDS   builds every target and fuzzes each for SECONDS (`make fuzz`)
# New inputs go to .build/fuzz/corpus/<target> (FUZZ_OUT/corpus), never into Fuzz/corpus: promoting one
# is a decision (docs/fuzzing.md). Crashing inputs land in .build/fuzz/artifacts/.
# It needs a clang whose libFuzzer runtime is there (-fsanitize=fuzzer): the Swift toolchain's
# (/opt/swift/usr/bin/clang) or clang on PATH. Without one it fails when CI=true and skips otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."
mode="${1:-check}"
seconds="${2:-60}"
out="${FUZZ_OUT:-.build/fuzz}"

# The first compiler that links a libFuzzer target under both sanitizers; `why` says what each lacked.
find_clang() {
  local probe why="" cc
  probe="$(mktemp -d)"
  printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' > "$probe/t.c"
  for cc in ${CC:-} /opt/swift/usr/bin/clang clang; do
    if ! command -v "$cc" >/dev/null 2>&1; then why="$why; $cc: not found"; continue; fi
    if "$cc" -fsanitize=fuzzer,address,undefined "$probe/t.c" -o "$probe/t" >"$probe/log" 2>&1; then
      rm -rf "$probe"
      echo "$cc"
      return 0
    fi
    why="$why; $cc: no -fsanitize=fuzzer,address,undefined ($(grep -m1 -i error "$probe/log" | cut -c1-160))"
  done
  rm -rf "$probe"
  echo "${why#; }"
  return 1
}

if ! cc="$(find_clang)"; then
  msg="no clang with libFuzzer and AddressSanitizer (the Swift toolchain's clang, /opt/swift/usr/bin/clang, has them): $cc"
  if [ "${CI:-}" = true ]; then echo "fuzz: FAILED: $msg" >&2; exit 1; fi
  echo "fuzz: skipped: $msg" >&2
  exit 0
fi

CC="$cc" Fuzz/build.sh "$out/bin" || exit 1

failed=()
for src in Fuzz/*.c; do
  t="$(basename "$src" .c)"
  corpus="Fuzz/corpus/$t"
  mkdir -p "$corpus" "$out/corpus/$t" "$out/artifacts" "$out/logs"
  log="$out/logs/$t.log"
  if [ "$mode" = fuzz ]; then
    time_limit="$seconds"
    scratch="$out/corpus/$t"
  else
    time_limit=5
    scratch="$(mktemp -d "$out/corpus/$t.check.XXXXXX")"
  fi
  # -timeout: one input may take at most 10 s; -rss_limit_mb: a leak that grows without bound fails too.
  "$out/bin/$t" -max_total_time="$time_limit" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$out/artifacts/$t-" "$scratch" "$corpus" >"$log" 2>&1
  rc=$?
  [ "$mode" = fuzz ] || rm -rf "$scratch"
  if [ $rc -ne 0 ]; then
    failed+=("$t")
    echo "fuzz: $t FAILED (exit $rc); the end of $log:" >&2
    tail -n 40 "$log" >&2
    continue
  fi
  # libFuzzer's last status line (executions, coverage, features, corpus) and its speed.
  done_line="$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n1)"
  runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")"
  speed="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")"
  echo "fuzz: $t ok: $runs executions, $speed exec/s; ${done_line#*DONE   }"
done

if [ ${#failed[@]} -ne 0 ]; then
  echo "fuzz: failed: ${failed[*]} (crashing inputs in $out/artifacts/)" >&2
  exit 1
fi
