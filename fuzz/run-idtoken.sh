#!/usr/bin/env bash
# Builds and runs the IDTokenKit libFuzzer target for N seconds (default 60).
#   fuzz/run-idtoken.sh [seconds]
# Output: .build-idtoken/fuzz/ (binary, working corpus, crash artifacts). Seeds: fuzz/IDToken/seeds,
# tokens signed with fuzz/IDToken/keys (test keys, nothing else trusts them) that are valid at the
# harness's fixed clock; fuzz/IDToken/make-seeds.py writes them again.
set -euo pipefail
seconds="${1:-60}"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${IDTOKEN_FUZZ_OUT:-$repo/.build-idtoken/fuzz}"
mkdir -p "$out/corpus" "$out/artifacts" "$out/modules"
flags=(-sanitize=fuzzer,address -parse-as-library -O -g -package-name kidledger)
openssl=(-Xcc -fmodule-map-file="$repo/Sources/COpenSSL/module.modulemap" -I "$repo/Sources/COpenSSL")

# The modules IDTokenKit imports, instrumented the same way, as static libraries.
swiftc "${flags[@]}" -module-name ByteWriting -emit-module -emit-module-path "$out/modules/ByteWriting.swiftmodule" \
    -emit-library -static -o "$out/libByteWriting.a" "$repo"/Sources/ByteWriting/*.swift
swiftc "${flags[@]}" -module-name LedgerModel -I "$out/modules" -emit-module -emit-module-path "$out/modules/LedgerModel.swiftmodule" \
    -emit-library -static -o "$out/libLedgerModel.a" "$repo"/Sources/LedgerModel/*.swift
swiftc "${flags[@]}" "${openssl[@]}" -module-name StoreKitJWS -emit-module -emit-module-path "$out/modules/StoreKitJWS.swiftmodule" \
    -emit-library -static -o "$out/libStoreKitJWS.a" "$repo"/Sources/StoreKitJWS/*.swift
# IDTokenKit, its test signer and the harness as one module.
swiftc "${flags[@]}" "${openssl[@]}" -module-name IDTokenFuzz -I "$out/modules" -L "$out" \
    "$repo"/Sources/IDTokenKit/*.swift "$repo"/Sources/IDTokenKitTesting/*.swift "$repo"/fuzz/IDToken/*.swift "$repo"/fuzz/Mutation/*.swift \
    -lStoreKitJWS -lLedgerModel -lByteWriting -lcrypto -o "$out/fuzz-idtoken"

exec "$out/fuzz-idtoken" "$out/corpus" "$repo/fuzz/IDToken/seeds" \
    -max_total_time="$seconds" -max_len=20000 -timeout=10 -rss_limit_mb=2048 \
    -dict="$repo/fuzz/IDToken/idtoken.dict" -artifact_prefix="$out/artifacts/" -print_final_stats=1
