#!/usr/bin/env bash
# Runs each fuzz target of the core for SECONDS seconds (default 60), one after another, with
# cargo-fuzz (`cargo install cargo-fuzz`) on the nightly toolchain. Seeds: the protobuf
# and JSON lines fixtures of tests/data. Crashes land in core/fuzz/artifacts/TARGET/. Not part of CI.
# TARGETS="facts json_text" runs only those targets.
set -euo pipefail
seconds=${1:-60}
cd "$(dirname "$0")"
root=$(cd ../.. && pwd)
targets=(${TARGETS:-protobuf_traces json_lines facts json_text collect screen})
# A seed's name: its path under tests/data with "/" as "_" (the corpora hold many files of one
# name, e.g. a_refund_ok.otlp.pb per framework, which a basename would let overwrite each other).
seed_name() { local rel=${1#"$root/tests/data/"}; echo "${rel//\//_}"; }
for target in "${targets[@]}"; do
  corpus=corpus/$target
  mkdir -p "$corpus"
  if [ "$target" = protobuf_traces ] || [ "$target" = facts ]; then
    # Seeds: single messages as they are, and the first record of length-prefixed files.
    find "$root/tests/data" -name '*.pb' -size -64k | while read -r file; do
      cp "$file" "$corpus/$(seed_name "$file")"
    done
  fi
  if [ "$target" = json_text ]; then
    # Seeds: the JSON text the GenAI fixtures carry in their attributes (each line as it is).
    # (sed, not head: head would close the pipe early, and pipefail would end the script.)
    find "$root/tests/data/corpus" -name '*.jsonl' -size -64k | sed -n 1,20p | while read -r file; do
      split -l 1 -a 4 "$file" "$corpus/$(seed_name "$file")."
    done
  elif [ "$target" != protobuf_traces ] && [ "$target" != collect ]; then
    # Seeds: each line of the JSON lines fixtures, one file a line.
    find "$root/tests/data" -name '*.jsonl' -size -64k | while read -r file; do
      split -l 1 -a 4 "$file" "$corpus/$(seed_name "$file")."
    done
  fi
  echo "== $target: ${seconds}s"
  cargo +nightly fuzz run "$target" "$corpus" -- -max_total_time="$seconds" -max_len=65536 \
    -timeout=10 -rss_limit_mb=2048 2>&1 | grep -E '^(#[0-9]+.*DONE|Done|==[0-9]+==|SUMMARY|artifact_prefix)' || true
  if compgen -G "artifacts/$target/crash-*" >/dev/null || compgen -G "artifacts/$target/timeout-*" >/dev/null; then
    echo "$target: found problems in artifacts/$target/"
    exit 1
  fi
done
echo "no crash, hang or leak found"
