import Foundation
import IDTokenKit
import IDTokenKitTesting
import XCTest

/// Key sets read from files and fetched over loopback HTTP with URLSession.
final class SystemKeySetFetcherTests: XCTestCase {
    private var folder: URL!

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("idtoken-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: folder)
    }

    func testReadsAFile() throws {
        let path = folder.appendingPathComponent("jwks.json").path
        try Data(Fixtures.keySet).write(to: URL(fileURLWithPath: path))
        XCTAssertEqual(try SystemKeySetFetcher().fetch(.file(path)), Fixtures.keySet)
        let keys = KeySetCache(location: .file(path))
        XCTAssertEqual(try keys.load().keys.keys.sorted(), ["ec-1", "rsa-1"])
        XCTAssertNotNil(keys.status.loadedAt)
    }

    func testFileIsReReadForAnUnknownKid() throws {
        let path = folder.appendingPathComponent("jwks.json").path
        try Data(TestSigningKey.keySet([Fixtures.rsa.jwk()])).write(to: URL(fileURLWithPath: path))
        let uptime = FakeUptime()
        let keys = KeySetCache(location: .file(path), uptime: uptime.clock)
        let verifier = IDTokenVerifier(provider: Fixtures.provider, keys: keys, replayGuard: InMemoryNonceReplayGuard())
        try keys.load()
        try Data(Fixtures.keySet).write(to: URL(fileURLWithPath: path))
        XCTAssertThrowsError(try verifier.verify(Fixtures.ec.sign(claims: Fixtures.claims()), now: Fixtures.now)) {
            XCTAssertEqual($0 as? IDTokenError, .unknownKey, "load() counts as the minute's fetch")
        }
        uptime.advance(60)
        XCTAssertEqual(try verifier.verify(Fixtures.ec.sign(claims: Fixtures.claims()), now: Fixtures.now).keyID, "ec-1")
    }

    func testUnreadableOrHugeFilesAreErrors() throws {
        XCTAssertThrowsError(try SystemKeySetFetcher().fetch(.file(folder.appendingPathComponent("missing").path)))
        let huge = folder.appendingPathComponent("huge.json")
        try Data(repeating: 0x20, count: JSONWebKeySet.maximumSize + 1).write(to: huge)
        XCTAssertThrowsError(try SystemKeySetFetcher().fetch(.file(huge.path))) {
            XCTAssertTrue("\($0)".contains("larger than"), "\($0)")
        }
        let keys = KeySetCache(location: .file(folder.appendingPathComponent("missing").path))
        XCTAssertThrowsError(try keys.load())
        XCTAssertNotNil(keys.status.lastError)
        XCTAssertNil(keys.status.loadedAt)
    }

    func testFetchesFromALoopbackURL() throws {
        let server = try StandInHTTPServer(status: 200, body: Fixtures.keySet)
        defer { server.stop() }
        let fetcher = SystemKeySetFetcher(timeout: 5)
        XCTAssertEqual(try fetcher.fetch(.url(server.url("/auth/keys"))), Fixtures.keySet)
        XCTAssertEqual(server.paths, ["/auth/keys"])

        // End to end: a verifier whose keys come from the loopback URL.
        let provider = try IDTokenProvider(flag: "name=local,issuer=\(Fixtures.issuer),audience=\(Fixtures.audience),jwks=\(server.url("/jwks"))")
        let verifiers = try IDTokenVerifiers(providers: [provider], replayGuard: InMemoryNonceReplayGuard())
        XCTAssertEqual(verifiers.loadKeys().count, 0)
        let token = try verifiers["local"]!.verify(Fixtures.rsa.sign(claims: Fixtures.claims()), now: Fixtures.now)
        XCTAssertEqual(token.provider, "local")
        XCTAssertEqual(server.paths, ["/auth/keys", "/jwks"])
    }

    func testHTTPErrorsAndNonJSONAreRefreshFailures() throws {
        let server = try StandInHTTPServer(status: 404, body: Array("{}".utf8))
        defer { server.stop() }
        XCTAssertThrowsError(try SystemKeySetFetcher(timeout: 5).fetch(.url(server.url("/jwks")))) {
            XCTAssertTrue("\($0)".contains("404"), "\($0)")
        }
        server.respond(status: 200, body: Array("<html>".utf8))
        let keys = KeySetCache(location: .url(server.url("/jwks")), fetcher: SystemKeySetFetcher(timeout: 5))
        XCTAssertThrowsError(try keys.load()) { XCTAssertTrue("\($0)".contains("not JSON"), "\($0)") }
    }

    func testRemoteHTTPIsRefusedWithoutAFetch() {
        XCTAssertThrowsError(try SystemKeySetFetcher().fetch(.url(URL(string: "http://example.com/jwks")!)))
    }

    func testUnreachableURLFailsWithinTheTimeout() throws {
        // A port nothing listens on: connection refused at once.
        let server = try StandInHTTPServer(status: 200, body: [])
        let url = server.url("/jwks")
        server.stop()
        let started = Date()
        XCTAssertThrowsError(try SystemKeySetFetcher(timeout: 3).fetch(.url(url)))
        XCTAssertLessThan(Date().timeIntervalSince(started), 5)
    }
}
