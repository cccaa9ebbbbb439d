// idtoken-check: prints IDTokenKit's verdict on each token of a file, for scripts that
// compare it with other JWT libraries (scripts/jwt-peer.sh).
//
//   idtoken-check --oidc-provider name=N,issuer=URL,audience=A[;A…],jwks=URL|FILE CASES.jsonl
//
// CASES.jsonl holds one JSON object a line, {"id": …, "token": …, "nonce": … (optional)};
// each is verified in order, now, by one verifier (so a nonce used twice is a replay). Prints
// one line per case, {"id": …, "verdict": "ok" or the refusal's reason}. Exit status 2 for
// bad arguments or input.
import Foundation
import IDTokenKit
import LedgerModel

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("idtoken-check: \(message)\n".utf8))
    exit(2)
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count == 3, arguments[0] == "--oidc-provider" else {
    fail("usage: idtoken-check --oidc-provider name=N,issuer=URL,audience=A[;A…],jwks=URL|FILE CASES.jsonl")
}
let provider: IDTokenProvider
do { provider = try IDTokenProvider(flag: arguments[1]) } catch { fail("\(error)") }
guard let input = FileManager.default.contents(atPath: arguments[2]) else { fail("cannot read \(arguments[2])") }

let verifiers: IDTokenVerifiers
do { verifiers = try IDTokenVerifiers(providers: [provider], replayGuard: InMemoryNonceReplayGuard()) } catch { fail("\(error)") }
for (name, error) in verifiers.loadKeys() { fail("\(name): \(error)") }
let verifier = verifiers[provider.name]!

var output = ""
for line in input.split(separator: UInt8(ascii: "\n")) where !line.isEmpty {
    guard let object = (try? JSONValue.parse(Array(line)))?.objectValue,
          let id = object["id"]?.stringValue, let token = object["token"]?.stringValue else {
        fail("not a case: \(String(decoding: line, as: UTF8.self))")
    }
    let verdict: String
    do {
        _ = try verifier.verify(token, nonce: object["nonce"]?.stringValue)
        verdict = "ok"
    } catch let error as IDTokenError {
        verdict = error.reason
    } catch {
        verdict = "error: \(error)"
    }
    output += JSONValue.object(["id": .string(id), "verdict": .string(verdict)]).serializedString + "\n"
}
FileHandle.standardOutput.write(Data(output.utf8))
