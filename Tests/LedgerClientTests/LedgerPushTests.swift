import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import LedgerClient
import LedgerModel
import LedgerServer
import XCTest

/// `registerForPush`, its re-registration after a token change and its removal on sign-out,
/// and `backgroundRefresh`, against a real server with a push gateway configured (nothing
/// listens there: registration never calls it).
final class LedgerPushTests: XCTestCase {
    static let appId = "com.example.kidmoney"
    private var directory = ""
    private var app: LedgerApp!
    private var base: URL { URL(string: "http://127.0.0.1:\(app.port)")! }

    override func setUpWithError() throws {
        directory = try LoopbackServer.makeDirectory("kidledger-push")
        app = try LoopbackServer.start(in: directory) { c in
            c.pushGateways = ["http://127.0.0.1:9/_matrix/push/v1/notify"]
            c.pushRetrySeconds = 30
        }
    }

    override func tearDown() {
        app?.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    static func key() -> String { (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined() }

    private func device(_ name: String) async throws -> (Ledger, FileCredentialStore) {
        let credentials = FileCredentialStore(file: URL(fileURLWithPath: directory).appendingPathComponent("\(name).token"))
        var options = Ledger.Options()
        options.retry = RetryPolicy(maxAttempts: 2, baseDelay: 0.05, maxDelay: 0.1)
        let ledger = try await Ledger.open(store: URL(fileURLWithPath: directory).appendingPathComponent("\(name).store"),
                                           server: base, credentials: credentials, transport: nil, options: options)
        return (ledger, credentials)
    }

    /// One request to the server with `token`.
    private func call(_ method: String, _ path: String, token: String, body: String? = nil) async throws -> (Int, JSONValue) {
        var request = URLRequest(url: base.appendingPathComponent(String(path.dropFirst())))
        request.httpMethod = method
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        if let body {
            request.httpBody = Data(body.utf8)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as! HTTPURLResponse).statusCode, (try? JSONValue.parse(Array(data))) ?? .null)
    }

    /// The `push` member of the token's entry in `GET /v1/tokens`.
    private func push(of token: String) async throws -> JSONValue? {
        let (_, me) = try await call("GET", "/v1/me", token: token)
        let id = me["token"]?["id"]?.stringValue
        let (_, list) = try await call("GET", "/v1/tokens", token: token)
        return list["items"]?.arrayValue?.first { $0["id"]?.stringValue == id }?["push"]
    }

    func testTheKeyIsRegisteredRegisteredAgainAfterATokenChangeAndRemovedOnSignOut() async throws {
        let (ledger, credentials) = try await device("mum")
        try await ledger.signUp(handle: "mum", displayName: "Mum")
        let firstToken = try await credentials.token()
        let first = try XCTUnwrap(firstToken)
        let key = Self.key()
        try await ledger.registerForPush(appId: Self.appId, pushKey: key.uppercased())
        let registered = try await push(of: first)
        XCTAssertEqual(registered?["appId"]?.stringValue, Self.appId)

        do {
            try await ledger.registerForPush(appId: Self.appId, pushKey: "not hex")
            XCTFail("a key that is not hex is refused")
        } catch LedgerError.invalidInput(let field, _) {
            XCTAssertEqual(field, "pushKey")
        }

        // Another device token for the same account; this device signs out, then in with it.
        let (status, made) = try await call("POST", "/v1/tokens", token: first, body: #"{"deviceName":"phone"}"#)
        XCTAssertEqual(status, 201)
        let second = try XCTUnwrap(made["secret"]?.stringValue)
        try await ledger.signOut()
        let (revoked, _) = try await call("GET", "/v1/me", token: first)
        XCTAssertEqual(revoked, 401, "signed out")
        let before = try await push(of: second)
        XCTAssertEqual(before, .null, "not registered yet")
        try await ledger.signIn(token: second)
        let again = try await push(of: second)
        XCTAssertEqual(again?["appId"]?.stringValue, Self.appId, "registered again for the new token")

        try await ledger.unregisterForPush()
        let after = try await push(of: second)
        XCTAssertEqual(after, .null)
    }

    func testARegistrationMadeOfflineIsSentAtTheNextSync() async throws {
        let (ledger, credentials) = try await device("mum")
        try await ledger.signUp(handle: "mum", displayName: "Mum")
        _ = try await ledger.addChild(named: "Ada")
        try await ledger.enableSharing(householdName: "Family")
        let stored = try await credentials.token()
        let token = try XCTUnwrap(stored)
        // The server is down: the registration waits.
        let port = app.port
        app.stop()
        try await ledger.registerForPush(appId: Self.appId, pushKey: Self.key())
        app = try LoopbackServer.start(in: directory, port: port) { c in
            c.pushGateways = ["http://127.0.0.1:9/_matrix/push/v1/notify"]
        }
        let offline = try await push(of: token)
        XCTAssertEqual(offline, .null, "offline: nothing reached the server")
        _ = try await ledger.syncNow()
        let synced = try await push(of: token)
        XCTAssertEqual(synced?["appId"]?.stringValue, Self.appId, "sent with the next sync")
    }

    /// A device paired to a child registers its own child token's key, and removes it.
    func testAChildsDeviceRegistersItsOwnToken() async throws {
        let (mum, _) = try await device("mum")
        try await mum.signUp(handle: "mum", displayName: "Mum")
        let ada = try await mum.addChild(named: "Ada")
        try await mum.enableSharing(householdName: "Family")
        let code = try await mum.pairChildDevice(ada.id)
        let (kid, kidCredentials) = try await device("kid")
        _ = try await kid.redeemChildCode(code.text)
        let kidMode = await kid.mode
        XCTAssertEqual(kidMode, .child(ada.id))
        try await kid.registerForPush(appId: Self.appId, pushKey: Self.key())
        let kidTokenId = await kid.meta(.tokenId), registeredFor = await kid.meta(.pushRegisteredTokenId)
        let tokenId = try XCTUnwrap(kidTokenId)
        XCTAssertEqual(registeredFor, tokenId, "the server took the child token's registration")
        // The server has it: registering the same token again is accepted, another token id is not.
        let stored = try await kidCredentials.token()
        let kidToken = try XCTUnwrap(stored)
        let body = "{\"appId\":\"\(Self.appId)\",\"pushKey\":\"\(Self.key())\"}"
        let (own, _) = try await call("PUT", "/v1/tokens/\(tokenId)/push", token: kidToken, body: body)
        XCTAssertEqual(own, 204)
        let (other, _) = try await call("PUT", "/v1/tokens/\(UUID().uuidString.lowercased())/push", token: kidToken, body: body)
        XCTAssertEqual(other, 404)
        try await kid.unregisterForPush()
        let afterRegistered = await kid.meta(.pushRegisteredTokenId), afterKey = await kid.meta(.pushKey)
        XCTAssertNil(afterRegistered)
        XCTAssertNil(afterKey)
        // A wake's refresh pulls the child's feed: Mum's payment arrives.
        try await mum.add(cents: 300, to: ada.id, note: "pocket money", source: .manual)
        _ = try await mum.syncNow()
        let changed = try await kid.backgroundRefresh(deadline: Date().addingTimeInterval(10))
        XCTAssertTrue(changed)
        let balance = try await kid.snapshot().children.first?.balanceCents
        XCTAssertEqual(balance, 300)
    }

    func testBackgroundRefreshSaysWhetherAnythingChanged() async throws {
        let (ledger, _) = try await device("mum")
        try await ledger.signUp(handle: "mum", displayName: "Mum")
        let ada = try await ledger.addChild(named: "Ada")
        try await ledger.enableSharing(householdName: "Family")
        _ = try await ledger.backgroundRefresh(deadline: Date().addingTimeInterval(10))
        let nothing = try await ledger.backgroundRefresh(deadline: Date().addingTimeInterval(10))
        XCTAssertFalse(nothing)
        try await ledger.add(cents: 500, to: ada.id, note: "allowance", source: .manual)
        let uploaded = try await ledger.backgroundRefresh(deadline: Date().addingTimeInterval(10))
        XCTAssertTrue(uploaded)
        do {
            _ = try await ledger.backgroundRefresh(deadline: Date().addingTimeInterval(-1))
            XCTFail("a deadline already past")
        } catch LedgerError.cancelled {}
    }

    func testAServerWithoutAGatewaySaysSo() async throws {
        app.stop()
        app = try LoopbackServer.start(in: directory)
        let (ledger, _) = try await device("mum")
        try await ledger.signUp(handle: "mum", displayName: "Mum")
        do {
            try await ledger.registerForPush(appId: Self.appId, pushKey: Self.key())
            XCTFail("no gateway")
        } catch LedgerError.server(let code, let status, _) {
            XCTAssertEqual(code, "push_not_configured")
            XCTAssertEqual(status, 404)
        }
    }
}
