#!/usr/bin/env bash
# tests/fuzz/fuzz_merge.sh [BUILD_DIR]: the fuzzers' committed corpus grows with what they find. Every
# input a fuzz test kept in BUILD_DIR/fuzz-corpus/<name>/ (ctest's fuzz runs write the new inputs
# there) that reaches code the committed corpus tests/fuzz/<name>/ does not is merged into it,
# minimised (libFuzzer's -merge=1 adds only inputs with new coverage, the smallest first). Run it
# after ctest -L fuzz (or `cmake --build build --target fuzz_merge`), then commit tests/fuzz/.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
[ -d "$build/fuzzers" ] || { echo "$build/fuzzers: no fuzz targets built (clang with libFuzzer, SUITE_FUZZ=ON)" >&2; exit 2; }
for fuzzer in "$build"/fuzzers/fuzz_*; do
    name=$(basename "$fuzzer")
    corpus=${name#fuzz_}
    found="$build/fuzz-corpus/$corpus"
    [ -d "$found" ] || continue
    mkdir -p "tests/fuzz/$corpus"
    before=$(find "tests/fuzz/$corpus" -type f | wc -l)
    "$fuzzer" -merge=1 "tests/fuzz/$corpus" "$found" >"$build/fuzz-merge-$corpus.log" 2>&1 ||
        { tail -20 "$build/fuzz-merge-$corpus.log"; exit 1; }
    echo "$name: $before -> $(find "tests/fuzz/$corpus" -type f | wc -l) inputs in tests/fuzz/$corpus"
done
