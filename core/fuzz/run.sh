#!/usr/bin/env bash
# Runs each fuzz target of the core for SECONDS seconds (default 60), one after another, with
# cargo-fuzz (`cargo install cargo-fuzz`) on the nightly toolchain. Seeds: the protobuf
# and JSON lines fixtures of tests/data. Crashes land in core/fuzz/artifacts/TARGET/. Not part of CI.
set -euo pipefail
seconds=${1:-60}
cd "$(dirname "$0")"
root=$(cd ../.. && pwd)
targets=(protobuf_traces json_lines facts json_text)
for target in "${targets[@]}"; do
  corpus=corpus/$target
  mkdir -p "$corpus"
  if [ "$target" = protobuf_traces ] || [ "$target" = facts ]; then
    # Seeds: single messages as they are, and the first record of length-prefixed files.
    find "$root/tests/data" -name '*.pb' -size -64k -exec cp -n {} "$corpus/" \;
  fi
  if [ "$target" = json_text ]; then
    # Seeds: the JSON text the GenAI fixtures carry in their attributes (each line as it is).
    find "$root/tests/data/corpus" -name '*.jsonl' -size -64k | head -20 | while read -r file; do
      split -l 1 -a 4 "$file" "$corpus/$(basename "$file")."
    done
  elif [ "$target" != protobuf_traces ]; then
    # Seeds: each line of the JSON lines fixtures, one file a line.
    find "$root/tests/data" -name '*.jsonl' -size -64k | while read -r file; do
      split -l 1 -a 4 "$file" "$corpus/$(basename "$file")."
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
