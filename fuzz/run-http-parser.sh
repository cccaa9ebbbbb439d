#!/usr/bin/env bash
# Builds the HTTP request parser with libFuzzer + AddressSanitizer and fuzzes it.
# Usage: fuzz/run-http-parser.sh [seconds=60]
set -euo pipefail
seconds="${1:-60}"
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
out="$repo/.build-fuzz"
mkdir -p "$out" "$out/corpus-http-parser"
src="$repo/Sources/HTTPServer"

swiftc -sanitize=fuzzer,address -parse-as-library -O -g \
    "$here/HTTPParser/HTTPParserFuzz.swift" \
    "$src/HTTPParser.swift" "$src/HTTPParserError.swift" "$src/HTTPRequestHead.swift" "$src/HTTPHeaders.swift" \
    -o "$out/http-parser-fuzz"

# Seed corpus (first byte = read size - 1).
seed() { printf "$2" > "$out/corpus-http-parser/$1"; }
seed get '\x07GET /a?b=c HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\n'
seed post '\x03POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhelloGET / HTTP/1.0\r\n\r\n'
seed chunked '\x02POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\nT: v\r\n\r\n'
seed expect '\xffPUT /x HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc'

"$out/http-parser-fuzz" -max_total_time="$seconds" -max_len=8192 -timeout=10 \
    -artifact_prefix="$out/" "$out/corpus-http-parser"
