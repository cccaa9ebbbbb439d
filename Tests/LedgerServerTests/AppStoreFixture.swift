import AppStoreTestSupport
import Foundation
import LedgerModel
@testable import LedgerServer
import LedgerServerTesting
import StoreKitJWS
import XCTest

/// Signs App Store transactions, renewal info and Server Notifications V2 with the test chain
/// this process generates (``AppStoreTestMaterial/chainFiles()``: a root, an intermediate and
/// a leaf with Apple's marker OIDs), and forges them in the ways an attacker would.
struct AppStoreFixture {
    static let bundleId = "com.example.kidledger"
    static let appAppleId: Int64 = 1_234_567_890
    static let products = ["pro.yearly", "pro.monthly"]

    /// The generated chain's files (its root is what test servers trust).
    static func files() throws -> TestCertificateChainFiles { try AppStoreTestMaterial.chainFiles() }

    /// `x5c` entry of a one-certificate PEM file.
    static func x5c(_ pemPath: String) throws -> String {
        TestCertificateChain.x5c(try String(contentsOfFile: pemPath, encoding: .utf8))
    }

    let signer: ES256Signer
    let chain: [String]

    init() throws {
        let files = try Self.files()
        signer = try ES256Signer(privateKeyPath: files.leafKey)
        chain = [try Self.x5c(files.leaf), try Self.x5c(files.intermediate), try Self.x5c(files.root)]
    }

    /// A server configured for the test chain, Production only.
    static func server(_ more: (inout LedgerAppConfiguration) -> Void = { _ in }) throws -> TestServer {
        let root = try files().root
        return try TestServer { c in
            c.bundleId = bundleId
            c.productIds = products
            c.appAppleId = appAppleId
            c.trustedRootPaths = [root]
            more(&c)
        }
    }

    func sign(_ payload: JSONObject, x5c: [String]? = nil, with key: ES256Signer? = nil) throws -> String {
        try (key ?? signer).sign(payloadJSON: JSONValue.object(payload).serialized(), x5c: x5c ?? chain)
    }

    static let day: Int64 = 86_400_000

    /// Transaction payload fields; dates in ms.
    static func transaction(owner: String, original: String, product: String = "pro.yearly", signedDate: Int64,
                            expires: Int64, revoked: Int64? = nil, environment: String = "Production",
                            bundle: String = bundleId) -> JSONObject {
        var t: JSONObject = [
            "transactionId": .string(original + "-\(signedDate)"), "originalTransactionId": .string(original),
            "bundleId": .string(bundle), "productId": .string(product),
            "purchaseDate": .int(signedDate - day), "originalPurchaseDate": .int(signedDate - 30 * day),
            "expiresDate": .int(expires), "signedDate": .int(signedDate), "environment": .string(environment),
            "type": "Auto-Renewable Subscription", "inAppOwnershipType": "PURCHASED",
            "appAccountToken": .string(owner), "quantity": 1,
        ]
        if let revoked { t["revocationDate"] = .int(revoked); t["revocationReason"] = 0 }
        return t
    }

    static func renewal(original: String, product: String = "pro.yearly", signedDate: Int64, autoRenew: Int = 1,
                        billingRetry: Bool = false, grace: Int64? = nil, environment: String = "Production") -> JSONObject {
        var r: JSONObject = [
            "originalTransactionId": .string(original), "productId": .string(product),
            "autoRenewProductId": .string(product), "autoRenewStatus": .int(Int64(autoRenew)),
            "isInBillingRetryPeriod": .bool(billingRetry), "signedDate": .int(signedDate),
            "environment": .string(environment),
        ]
        if let grace { r["gracePeriodExpiresDate"] = .int(grace) }
        return r
    }

    /// The outer notification payload around already signed nested JWS.
    static func notification(type: String, subtype: String? = nil, uuid: String = UUID().uuidString.lowercased(),
                             signedDate: Int64, transaction: String?, renewal: String?, status: Int? = nil,
                             environment: String = "Production", bundle: String = bundleId,
                             appAppleId: Int64? = appAppleId) -> JSONObject {
        var data: JSONObject = ["bundleId": .string(bundle), "bundleVersion": "1.0", "environment": .string(environment)]
        if let appAppleId { data["appAppleId"] = .int(appAppleId) }
        if let transaction { data["signedTransactionInfo"] = .string(transaction) }
        if let renewal { data["signedRenewalInfo"] = .string(renewal) }
        if let status { data["status"] = .int(Int64(status)) }
        var n: JSONObject = ["notificationType": .string(type), "notificationUUID": .string(uuid), "version": "2.0",
                             "signedDate": .int(signedDate), "data": .object(data)]
        if let subtype { n["subtype"] = .string(subtype) }
        return n
    }

    /// A complete signed notification about one purchase event.
    func event(_ type: String, subtype: String? = nil, owner: String, original: String, signedDate: Int64,
               expires: Int64, product: String = "pro.yearly", revoked: Int64? = nil, autoRenew: Int = 1,
               billingRetry: Bool = false, grace: Int64? = nil, status: Int? = nil,
               uuid: String = UUID().uuidString.lowercased(), environment: String = "Production") throws -> String {
        let t = try sign(Self.transaction(owner: owner, original: original, product: product, signedDate: signedDate,
                                          expires: expires, revoked: revoked, environment: environment))
        let r = try sign(Self.renewal(original: original, product: product, signedDate: signedDate, autoRenew: autoRenew,
                                      billingRetry: billingRetry, grace: grace, environment: environment))
        return try sign(Self.notification(type: type, subtype: subtype, uuid: uuid, signedDate: signedDate,
                                          transaction: t, renewal: r, status: status, environment: environment))
    }
}

extension TestServer {
    /// Posts `{signedPayload}` to the notification endpoint, without a token.
    func notify(_ signedPayload: String) -> Reply {
        call("POST", "/v1/app-store/notifications", json: .obj(["signedPayload": .string(signedPayload)]))
    }
}

/// Asserts that a problem's `detail` is written in the API's words: a sentence, with no
/// Swift enum case (`invalidChain("…")`, `wrongProduct`) and no verifier or OpenSSL reason.
func assertPlainDetail(_ reply: TestServer.Reply, _ label: String, file: StaticString = #filePath, line: UInt = #line) {
    let detail = reply.json["detail"]?.stringValue ?? ""
    XCTAssertTrue(detail.hasPrefix("The ") && detail.hasSuffix("."), "\(label): \(detail)", file: file, line: line)
    let dumps = ["malformed", "unsupportedAlgorithm", "invalidChain", "invalidSignature", "wrongBundle", "wrongProduct",
                 "wrongEnvironment", "revoked(", "accountMismatch", "wrongAppAppleId", "renewalMismatch", "JWSError",
                 "PolicyError", "(\"", "failure", "unable to", "x5c[", "DER", "PEM"]
    for dump in dumps {
        XCTAssertFalse(detail.contains(dump), "\(label): \(detail)", file: file, line: line)
    }
    XCTAssertNil(detail.range(of: #"[a-z][A-Za-z]*\("#, options: .regularExpression), "\(label): \(detail)", file: file, line: line)
}
