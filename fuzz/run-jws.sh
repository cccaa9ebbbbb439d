#!/usr/bin/env bash
# Builds and runs the StoreKitJWS libFuzzer target for N seconds (default 60).
#   fuzz/run-jws.sh [seconds]
# Output: .build-jws/fuzz/ (binary, working corpus, crash artifacts). Seeds: fuzz/JWS/seeds.
set -euo pipefail
seconds="${1:-60}"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${JWS_FUZZ_OUT:-$repo/.build-jws/fuzz}"
mkdir -p "$out/corpus" "$out/artifacts"

swiftc -sanitize=fuzzer,address -parse-as-library -O -g \
    -module-name JWSFuzz \
    -Xcc -fmodule-map-file="$repo/Sources/COpenSSL/module.modulemap" \
    -I "$repo/Sources/COpenSSL" \
    -lcrypto \
    "$repo"/Sources/StoreKitJWS/*.swift "$repo"/fuzz/JWS/*.swift "$repo"/fuzz/Mutation/*.swift \
    "$repo"/Tests/AppStoreTestSupport/TestCertificateChain.swift \
    -o "$out/fuzz-jws"

# Trust: $JWS_FUZZ_ROOTS if given, else Apple's test root and G3 from Tests/Fixtures/app-store
# and a chain the target generates at start (see FuzzJWS.swift). Apple's mock signed
# transaction joins the working corpus.
cp "$repo/Tests/Fixtures/app-store/mock-signed/transactionInfo" "$out/corpus/apple-mock-transactionInfo"

exec "$out/fuzz-jws" "$out/corpus" "$repo/fuzz/JWS/seeds" \
    -max_total_time="$seconds" -max_len=32768 -timeout=10 -rss_limit_mb=2048 \
    -dict="$repo/fuzz/JWS/jws.dict" -artifact_prefix="$out/artifacts/" -print_final_stats=1
