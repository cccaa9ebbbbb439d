import Foundation
import IDTokenKit
import XCTest

/// `--oidc-provider` values, the built-in Apple provider, and the registry.
final class IDTokenProviderTests: XCTestCase {
    func testFlagIsRead() throws {
        let provider = try IDTokenProvider(flag: "name=authentik,issuer=https://auth.example.org/application/o/ledger/,audience=abc;def,jwks=https://auth.example.org/application/o/ledger/jwks/")
        XCTAssertEqual(provider.name, "authentik")
        XCTAssertEqual(provider.issuer, "https://auth.example.org/application/o/ledger/")
        XCTAssertEqual(provider.audiences, ["abc", "def"])
        XCTAssertEqual(provider.keySet, .url(URL(string: "https://auth.example.org/application/o/ledger/jwks/")!))
        XCTAssertEqual(provider.leeway, 60)
    }

    func testMembersInAnyOrderFilesAndCommasInsideValues() throws {
        let provider = try IDTokenProvider(flag: "jwks=/etc/kidledger/google.json,audience=1.apps.googleusercontent.com,issuer=https://accounts.google.com,name=google")
        XCTAssertEqual(provider.keySet, .file("/etc/kidledger/google.json"))
        let withComma = try IDTokenProvider(flag: "name=kc,issuer=https://kc.example/realms/a,b,audience=x,jwks=https://kc.example/certs?a=1,2")
        XCTAssertEqual(withComma.issuer, "https://kc.example/realms/a,b")
        XCTAssertEqual(withComma.keySet, .url(URL(string: "https://kc.example/certs?a=1,2")!))
        let relative = try IDTokenProvider(flag: "name=f,issuer=https://i.example,audience=a,jwks=keys/jwks.json")
        XCTAssertEqual(relative.keySet, .file(FileManager.default.currentDirectoryPath + "/keys/jwks.json"))
        XCTAssertEqual(try IDTokenProvider(flag: "name=f,issuer=https://i.example,audience=a,jwks=file:///srv/jwks.json").keySet,
                       .file("/srv/jwks.json"))
        XCTAssertEqual(try IDTokenProvider(flag: "name=f,issuer=https://i.example,audience=a,jwks=http://127.0.0.1:9000/jwks").keySet,
                       .url(URL(string: "http://127.0.0.1:9000/jwks")!))
    }

    func testBadFlagsSayWhatIsWrong() {
        let cases: [(String, String)] = [
            ("name=g,issuer=https://i.example,audience=a", "jwks= is missing"),
            ("name=g,issuer=https://i.example,audience=a,jwks=/k,name=h", "name= is given twice"),
            ("nam=g,issuer=https://i.example,audience=a,jwks=/k", "expected name=, issuer=, audience= and jwks=, got \"nam=g\""),
            ("name=,issuer=https://i.example,audience=a,jwks=/k", "name= is empty"),
            ("name=apple,issuer=https://appleid.apple.com,audience=a,jwks=/k", "apple is the built-in provider"),
            ("name=Google,issuer=https://i.example,audience=a,jwks=/k", "must be 1 to 32 of a-z, 0-9 and -"),
            ("name=g/x,issuer=https://i.example,audience=a,jwks=/k", "must be 1 to 32 of a-z, 0-9 and -"),
            ("name=g,issuer=accounts.google.com,audience=a,jwks=/k", "is not an http(s) URL"),
            ("name=g,issuer=https://i.example,audience=a;;b,jwks=/k", "audience \"\" is empty"),
            ("name=g,issuer=https://i.example,audience=a,jwks=http://keys.example/jwks", "fetched over https"),
            ("name=g,issuer=https://i.example,audience=a,jwks=ftp://keys.example/jwks", "an https URL or a file"),
            ("", "expected name="),
        ]
        for (flag, message) in cases {
            XCTAssertThrowsError(try IDTokenProvider(flag: flag), flag) { error in
                let text = (error as? ProviderSpecError)?.message ?? ""
                XCTAssertTrue(text.hasPrefix("--oidc-provider \(flag): "), text)
                XCTAssertTrue(text.contains(message), "\(flag): \(text)")
            }
        }
    }

    func testAppleIsBuiltIn() throws {
        let apple = try IDTokenProvider.apple(clientIDs: ["com.example.kidledger", "com.example.kidledger.web"])
        XCTAssertEqual(apple.name, "apple")
        XCTAssertEqual(apple.issuer, "https://appleid.apple.com")
        XCTAssertEqual(apple.audiences, ["com.example.kidledger", "com.example.kidledger.web"])
        XCTAssertEqual(apple.keySet, .url(URL(string: "https://appleid.apple.com/auth/keys")!))
        XCTAssertEqual(try IDTokenProvider.apple(clientIDs: ["a"], keySet: KeySetLocation(parsing: "/srv/apple.json")).keySet,
                       .file("/srv/apple.json"))
        XCTAssertThrowsError(try IDTokenProvider.apple(clientIDs: []))
    }

    func testRegistryRefusesRepeatedNamesAndSharesKeySets() throws {
        let a = try IDTokenProvider(name: "a", issuer: "https://i.example", audiences: ["x"], keySet: .file("/k"))
        let b = try IDTokenProvider(name: "b", issuer: "https://j.example", audiences: ["y"], keySet: .file("/k"))
        XCTAssertThrowsError(try IDTokenVerifiers(providers: [a, a], replayGuard: InMemoryNonceReplayGuard()))
        let verifiers = try IDTokenVerifiers(providers: [a, b], replayGuard: InMemoryNonceReplayGuard())
        XCTAssertEqual(verifiers.names, ["a", "b"])
        XCTAssertNil(verifiers["c"])
        XCTAssertTrue(verifiers["a"]!.keys === verifiers["b"]!.keys)
        XCTAssertEqual(Set(verifiers.loadKeys().keys), ["a", "b"], "the missing file fails both")
    }
}
