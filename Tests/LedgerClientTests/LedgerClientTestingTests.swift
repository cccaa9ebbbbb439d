import Foundation
import LedgerClient
import LedgerClientTesting
import XCTest

/// The public surface of `LedgerClientTesting`, used the way an app's tests use it.
final class LedgerClientTestingTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("kidledger-testing-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    private struct NoConnection: Error {}

    func testAClosurePlaysTheServer() async throws {
        let requests = Requests()
        let server = InMemoryTransport { request in
            requests.append(request)
            return .json(#"{"code": "unauthenticated", "detail": "no such token"}"#, status: 401)
        }
        let ledger = try await Ledger.open(store: directory.appendingPathComponent("a.store"),
                                           credentials: InMemoryCredentialStore(), transport: server)
        do {
            try await ledger.signIn(token: "kl_test")
            XCTFail("signed in with a token the server refused")
        } catch let error as LedgerError {
            XCTAssertEqual(error, .unauthenticated)
        }
        let sent = try XCTUnwrap(requests.all.first)
        XCTAssertEqual(sent.method, "GET")
        XCTAssertEqual(sent.path, "/v1/me")
        XCTAssertEqual(sent.header("authorization"), "Bearer kl_test")
        XCTAssertEqual(InMemoryTransport.Response.json("{}").headers["Content-Type"], "application/json")
    }

    func testAThrowingServerIsOfflineAndChangesStayLocal() async throws {
        let server = InMemoryTransport(respond: { _ in throw NoConnection() })
        let ledger = try await Ledger.open(store: directory.appendingPathComponent("b.store"),
                                           credentials: InMemoryCredentialStore(), transport: server)
        let ada = try await ledger.addChild(named: "Ada")
        try await ledger.add(cents: 250, to: ada.id)
        do {
            try await ledger.signIn(token: "kl_test")
            XCTFail("signed in without a server")
        } catch let error as LedgerError {
            XCTAssertEqual(error, .offline)
        }
        let snapshot = try await ledger.snapshot()
        XCTAssertEqual(snapshot.children.map(\.balanceCents), [250])
    }

    func testFaultsCanTakeTheDeviceOffline() async throws {
        let answered = Requests()
        let server = InMemoryTransport { request in
            answered.append(request)
            return .json("{}", status: 500)
        }
        let network = FaultInjectingTransport(wrapping: server, seed: 1)
        network.faults.offline = true
        let ledger = try await Ledger.open(store: directory.appendingPathComponent("c.store"),
                                           credentials: InMemoryCredentialStore(), transport: network)
        do {
            try await ledger.signIn(token: "kl_test")
            XCTFail("signed in while offline")
        } catch let error as LedgerError {
            XCTAssertEqual(error, .offline)
        }
        XCTAssertTrue(answered.all.isEmpty, "nothing reached the server")
        XCTAssertEqual(network.injected.requests, 0, "offline refusals are not drops")

        network.faults = .init(dropRequest: 1)
        _ = try? await ledger.signIn(token: "kl_test")
        XCTAssertTrue(answered.all.isEmpty)
        XCTAssertGreaterThan(network.injected.requests, 0)

        let url = FaultInjectingTransport(server: URL(string: "http://127.0.0.1:9")!, seed: 2, faults: .init(offline: true))
        XCTAssertTrue(url.faults.offline)
    }

    func testTheSeededGeneratorReplays() {
        var a = SeededGenerator(seed: 42), b = SeededGenerator(seed: 42)
        XCTAssertEqual((0..<5).map { _ in a.next() }, (0..<5).map { _ in b.next() })
        XCTAssertEqual(Int.random(in: 0..<1_000_000, using: &a), Int.random(in: 0..<1_000_000, using: &b))
    }
}

/// Requests seen by a test server, from any thread.
private final class Requests: @unchecked Sendable {
    private let lock = NSLock()
    private var requests: [InMemoryTransport.Request] = []

    func append(_ request: InMemoryTransport.Request) {
        lock.lock()
        defer { lock.unlock() }
        requests.append(request)
    }

    var all: [InMemoryTransport.Request] {
        lock.lock()
        defer { lock.unlock() }
        return requests
    }
}
