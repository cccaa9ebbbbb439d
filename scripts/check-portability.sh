#!/usr/bin/env bash
# Checks that the device SDK can build beyond Linux: every module in the dependency closure of
# LedgerClient and of LedgerClientTesting (which apps link into their tests) imports platform
# modules (Glibc, Darwin, FoundationNetworking, Security, …) only inside an `#if canImport(…)`
# block, and none of them depends on a server-only target. Exits 1 and names each offending
# file and line. Usage: scripts/check-portability.sh [TARGET] (default: both of those).
set -euo pipefail
if [ $# -eq 0 ]; then
  self="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
  status=0
  for target in LedgerClient LedgerClientTesting; do bash "$self" "$target" || status=1; done
  exit "$status"
fi
cd "$(dirname "$0")/.."

client="$1"
server_only=(SQLiteServerKit HTTPServer StoreKitJWS LedgerServer LedgerServerTesting LedgerCore LedgerStorageSQLite LedgerStoragePostgres COpenSSL)
platform='Glibc|Darwin|Musl|Bionic|Android|WASILibc|WinSDK|ucrt|CRT|FoundationNetworking|FoundationXML|Security|UIKit|AppKit|Network|SystemConfiguration'

manifest=$(swift package dump-package)
# Transitive target dependencies of $client, itself included.
closure=$(jq -r --arg root "$client" '
  (.targets | map({key: .name, value: [.dependencies[] | (.byName // .target // .product)[0]]}) | from_entries) as $deps
  | def walk_deps($todo; $seen):
      if ($todo | length) == 0 then $seen
      else ($todo[0]) as $t
        | if ($seen | index([$t])) then walk_deps($todo[1:]; $seen)
          else walk_deps($todo[1:] + ($deps[$t] // []); $seen + [$t]) end
      end;
    walk_deps([$root]; []) | .[]' <<<"$manifest")

status=0
for t in $closure; do
  for s in "${server_only[@]}"; do
    if [ "$t" = "$s" ]; then
      echo "portability: $client depends on the server-only target $t"
      status=1
    fi
  done
  dir="Sources/$t"
  [ -d "$dir" ] || continue
  while IFS= read -r -d '' file; do
    # A platform import is fine only inside an #if branch whose condition uses canImport.
    if ! awk -v file="$file" -v platform="^($platform)$" '
      function guarded(   i) { for (i = 1; i <= depth; i++) if (cond[i] ~ /canImport\(/) return 1; return 0 }
      /^[ \t]*#if[ \t(]/       { depth++; cond[depth] = $0; next }
      /^[ \t]*#elseif[ \t(]/   { cond[depth] = $0; next }
      /^[ \t]*#else([ \t]|$)/  { next }
      /^[ \t]*#endif/          { depth--; next }
      /^[ \t]*(@[A-Za-z_]+[ \t]+)*import[ \t]/ {
        line = $0
        sub(/^[ \t]*(@[A-Za-z_]+[ \t]+)*import[ \t]+((typealias|struct|class|enum|protocol|let|var|func)[ \t]+)?/, "", line)
        split(line, parts, /[ \t.\/]/)
        if (parts[1] ~ platform && !guarded()) {
          printf "portability: %s:%d imports %s outside #if canImport(…)\n", file, NR, parts[1]
          bad = 1
        }
      }
      END { exit bad }' "$file"; then
      status=1
    fi
  done < <(find "$dir" -name '*.swift' -print0)
done

if [ "$status" -eq 0 ]; then
  echo "portability: $client and its dependencies ($(echo $closure | tr '\n' ' ')) import platform modules only behind canImport"
fi
exit "$status"
