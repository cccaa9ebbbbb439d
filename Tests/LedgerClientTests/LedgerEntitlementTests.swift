import AppStoreTestSupport
import Foundation
@testable import LedgerClient
import LedgerModel
import LedgerServer
import LedgerServerTesting
import StoreKitJWS
import XCTest

/// `Ledger.proStatus()`: the server's signed entitlement, verified on the device and
/// answered from the kept token while offline, until it expires.
final class LedgerEntitlementTests: XCTestCase {
    func testProStatusIsVerifiedKeptAndExpiresOffline() async throws {
        let chain = try AppStoreTestMaterial.chainFiles()
        let directory = try LoopbackServer.makeDirectory("kidledger-entitlement")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try TestServer(.live, dataDirectory: directory + "/server") { c in
            c.http.eventLoops = 1
            c.bundleId = "com.example.kidledger"
            c.productIds = ["pro.yearly"]
            c.appAppleId = 1_234_567_890
            c.trustedRootPaths = [chain.root]
        }
        var running = true
        defer { if running { server.stop() } }
        let base = URL(string: server.base)!

        var options = Ledger.Options()
        options.retry = RetryPolicy(maxAttempts: 1, baseDelay: 0.01, maxDelay: 0.01)
        let credentials = FileCredentialStore(file: URL(fileURLWithPath: directory + "/mum.token"))
        let ledger = try await Ledger.open(store: URL(fileURLWithPath: directory + "/mum.store"), server: base,
                                           credentials: credentials, transport: nil, options: options)
        try await ledger.signUp(handle: "mum", displayName: "Mum")
        try await ledger.enableSharing(householdName: "Family")
        let snapshot = try await ledger.snapshot()
        let household = try XCTUnwrap(snapshot.household?.id)
        let account = await ledger.account
        let accountId = try XCTUnwrap(account?.id)

        // Without a subscription: verified, not Pro.
        var status = try await ledger.proStatus()
        XCTAssertFalse(status.isPro); XCTAssertFalse(status.fromCache)

        // The owner registers a purchase that ends in a few seconds.
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let expires = now + 4_000
        let x5c = try AppStoreTestMaterial.chain().x5c
        let transaction: JSONValue = .object([
            "transactionId": "1", "originalTransactionId": "1", "bundleId": "com.example.kidledger", "productId": "pro.yearly",
            "expiresDate": .int(expires), "signedDate": .int(now - 60_000), "environment": "Production",
            "appAccountToken": .string(accountId), "type": "Auto-Renewable Subscription",
        ])
        let jws = try ES256Signer(privateKeyPath: chain.leafKey)
            .sign(payloadJSON: transaction.serialized(), x5c: x5c)
        let api = APIClient(transport: URLSessionTransport(baseURL: base), token: try await credentials.token())
        _ = try api.call("PUT", "/v1/households/\(household)/subscription",
                         body: JSONValue.object(["signedTransaction": .string(jws)]).serialized())

        status = try await ledger.proStatus()
        XCTAssertTrue(status.isPro); XCTAssertFalse(status.fromCache)
        XCTAssertEqual(status.state, "active"); XCTAssertEqual(status.productId, "pro.yearly")
        XCTAssertEqual(status.validUntil.timeIntervalSince1970, Double(expires / 1000), "the token ends with the subscription")

        // Offline: the kept token answers until it expires.
        server.stop()
        running = false
        status = try await ledger.proStatus()
        XCTAssertTrue(status.isPro); XCTAssertTrue(status.fromCache)
        status = try await ledger.proStatus(now: Date(timeIntervalSince1970: Double(expires / 1000) + 1))
        XCTAssertFalse(status.isPro, "past exp the kept token grants nothing")

        // A kept token that was tampered with is not believed.
        let keptToken = await ledger.meta(.entitlementToken)
        let kept = try XCTUnwrap(keptToken)
        var parts = kept.split(separator: ".").map(String.init)
        var claims = try JSONValue.parse(XCTUnwrap(EntitlementToken.base64url(parts[1])))
        if case .object(var o) = claims { o["exp"] = .int(expires / 1000 + 365 * 86_400); claims = .object(o) }
        parts[1] = Base64Codec.encode(claims.serialized(), alphabet: .url)
        try await ledger.setMeta(.entitlementToken, parts.joined(separator: "."))
        status = try await ledger.proStatus(now: Date(timeIntervalSince1970: Double(expires / 1000) + 1))
        XCTAssertFalse(status.isPro)
        XCTAssertNil(EntitlementToken.verify(parts.joined(separator: "."), keys: .object(["keys": .array([])]),
                                             household: household, now: Date(), fromCache: true))
    }
}
