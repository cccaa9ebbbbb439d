import Foundation
import LedgerModel
import LedgerServerTesting
import XCTest

/// The identity flags and variables of `kidledger-server serve`, as an operator gives them:
/// bad ones stop the server at start (exit 2, a message naming the flag), good ones offer
/// their providers.
final class IdentityFlagTests: XCTestCase {
    private func folder() throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("kidledger-idflags-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        return dir
    }

    private func serve(_ arguments: [String], environment: [String: String] = [:]) throws -> (status: Int32, err: String) {
        let process = Process()
        process.executableURL = try ServerProcess.binary()
        process.arguments = ["serve", "--port", "0", "--data-dir", try folder()] + arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let err = Pipe()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = err
        try process.run()
        let e = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: e, as: UTF8.self))
    }

    func testBadIdentityFlagsStopTheServerWithExitStatus2() throws {
        let cases: [([String], [String: String], String)] = [
            (["--oidc-provider", "name=x,issuer=https://x.example,audience=a"], [:], "jwks= is missing"),
            (["--oidc-provider", "name=Bad,issuer=https://x.example,audience=a,jwks=/k"], [:], "provider name"),
            (["--oidc-provider", "name=apple,issuer=https://x.example,audience=a,jwks=/k"], [:], "built-in"),
            (["--apple-jwks", "/k"], [:], "--apple-jwks needs --apple-client-id"),
            (["--apple-team-id", "T"], [:], "go together"),
            ([], ["KIDLEDGER_OIDC_PROVIDERS": "name=a,issuer=https://a.example,audience=x,jwks=/k|name=a,issuer=https://b.example,audience=y,jwks=/k"],
             "given twice"),
            ([], ["KIDLEDGER_APPLE_CLIENT_IDS": "com.example.app", "KIDLEDGER_APPLE_JWKS": "http://keys.example/jwks"], "--apple-jwks"),
        ]
        for (arguments, environment, message) in cases {
            let r = try serve(arguments, environment: environment)
            XCTAssertEqual(r.status, 2, "\(arguments) \(environment): \(r.err)")
            XCTAssertTrue(r.err.contains(message), "\(arguments) \(environment): \(r.err)")
        }
    }

    /// Providers from the variables: specs separated by `|` (and newlines), client ids by commas.
    func testProvidersFromTheEnvironment() throws {
        let jwks = try IdentityFixture.keySetFile()
        defer { try? FileManager.default.removeItem(atPath: jwks) }
        let server = try ServerProcess(binary: ServerProcess.binary(), dataDir: try folder(), environment: [
            "KIDLEDGER_OIDC_PROVIDERS": IdentityFixture.spec(jwks, name: "one") + "|" + IdentityFixture.spec(jwks, name: "two")
                + "\n" + IdentityFixture.spec(jwks, name: "three"),
            "KIDLEDGER_APPLE_CLIENT_IDS": "com.example.kidledger, com.example.web",
            "KIDLEDGER_APPLE_JWKS": jwks,
        ])
        defer { server.kill9() }
        let base = "http://127.0.0.1:\(server.port)"
        for (name, status) in [("one", 201), ("two", 201), ("three", 201), ("apple", 401), ("four", 404)] {
            let r = TestServer.request(base: base, "POST", "/v1/auth/\(name)", token: nil,
                                       json: .obj(["idToken": .string(IdentityFixture.token(IdentityFixture.subject())),
                                                   "handle": .string("env\(name)")]),
                                       rawBody: nil, headers: [:], timeout: 10)
            XCTAssertEqual(r.status, status, "\(name): \(String(decoding: r.body, as: UTF8.self))")
        }
    }
}
