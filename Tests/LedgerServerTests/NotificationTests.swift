import Foundation
import LedgerModel
@testable import LedgerServer
import LedgerServerTesting
@testable import LedgerStorageSQLite
import StoreKitJWS
import XCTest

/// App Store Server Notifications V2 against a real server, signed with the generated test chain.
final class NotificationTests: XCTestCase {
    var f: AppStoreFixture!
    var now: Int64 = 0
    let day = AppStoreFixture.day

    override func setUpWithError() throws {
        f = try AppStoreFixture()
        now = Int64(Date().timeIntervalSince1970 * 1000)
    }

    /// An owner's household with `original` registered by an upload signed at `signedDate`.
    func registered(_ s: TestServer, _ handle: String, original: String, signedDate: Int64, expires: Int64) throws
        -> (owner: String, token: String, household: String) {
        let (owner, t) = s.signup(handle)
        let h = s.household(t)
        let put = try upload(s, t, h, owner: owner, original: original, signedDate: signedDate, expires: expires)
        XCTAssertEqual(put.status, 200, String(decoding: put.body, as: UTF8.self))
        return (owner, t, h)
    }

    func upload(_ s: TestServer, _ token: String, _ household: String, owner: String, original: String,
                signedDate: Int64, expires: Int64, renewal: String? = nil, environment: String = "Production") throws -> TestServer.Reply {
        let jws = try f.sign(AppStoreFixture.transaction(owner: owner, original: original, signedDate: signedDate, expires: expires,
                                                         environment: environment))
        var body: JSONObject = ["signedTransaction": .string(jws)]
        if let renewal { body["signedRenewalInfo"] = .string(renewal) }
        return s.call("PUT", "/v1/households/\(household)/subscription", token: token, json: .object(body))
    }

    func entitlement(_ s: TestServer, _ token: String, _ household: String) -> JSONValue {
        s.call("GET", "/v1/households/\(household)/entitlement", token: token).json
    }

    func testEveryTypeMovesTheStateMachine() throws {
        let s = try AppStoreFixture.server()
        defer { s.stop() }
        let original = "1000000000000001"
        var signed = now - 10 * day
        let (owner, t, h) = try registered(s, "mum", original: original, signedDate: signed, expires: now + 20 * day)
        XCTAssertEqual(entitlement(s, t, h)["state"], "active")
        XCTAssertEqual(entitlement(s, t, h)["source"], "upload")

        struct Step {
            var type: String; var subtype: String?; var expires: Int64; var product = "pro.yearly"; var revoked: Int64?
            var autoRenew = 1; var billingRetry = false; var grace: Int64?; var status: Int?
            var state: String; var pro: Bool
        }
        let steps: [Step] = [
            Step(type: "SUBSCRIBED", subtype: "INITIAL_BUY", expires: now + 20 * day, status: 1, state: "active", pro: true),
            Step(type: "DID_RENEW", expires: now + 50 * day, status: 1, state: "active", pro: true),
            Step(type: "DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_DISABLED", expires: now + 50 * day, autoRenew: 0,
                 status: 1, state: "active", pro: true),
            Step(type: "DID_CHANGE_RENEWAL_PREF", subtype: "UPGRADE", expires: now + 40 * day, product: "pro.monthly",
                 status: 1, state: "active", pro: true),
            Step(type: "OFFER_REDEEMED", subtype: "UPGRADE", expires: now + 45 * day, product: "pro.monthly", status: 1,
                 state: "active", pro: true),
            Step(type: "RENEWAL_EXTENDED", expires: now + 90 * day, status: 1, state: "active", pro: true),
            Step(type: "DID_FAIL_TO_RENEW", subtype: "GRACE_PERIOD", expires: now - day, billingRetry: true,
                 grace: now + 5 * day, status: 4, state: "inGracePeriod", pro: true),
            Step(type: "GRACE_PERIOD_EXPIRED", expires: now - day, billingRetry: true, grace: now - 3_600_000, status: 3,
                 state: "billingRetry", pro: false),
            Step(type: "DID_RENEW", subtype: "BILLING_RECOVERY", expires: now + 30 * day, status: 1, state: "active", pro: true),
            Step(type: "DID_FAIL_TO_RENEW", expires: now - day, billingRetry: true, status: 3, state: "billingRetry", pro: false),
            Step(type: "EXPIRED", subtype: "BILLING_RETRY", expires: now - day, status: 2, state: "expired", pro: false),
            Step(type: "SUBSCRIBED", subtype: "RESUBSCRIBE", expires: now + 30 * day, status: 1, state: "active", pro: true),
            Step(type: "EXPIRED", subtype: "VOLUNTARY", expires: now - day, autoRenew: 0, status: 2, state: "expired", pro: false),
            Step(type: "SUBSCRIBED", subtype: "RESUBSCRIBE", expires: now + 30 * day, status: 1, state: "active", pro: true),
            Step(type: "REFUND", expires: now + 30 * day, revoked: now - 60_000, status: 2, state: "refunded", pro: false),
            Step(type: "REFUND_REVERSED", expires: now + 30 * day, status: 1, state: "active", pro: true),
            Step(type: "REVOKE", expires: now + 30 * day, revoked: now - 60_000, status: 5, state: "revoked", pro: false),
        ]
        for step in steps {
            signed += 60_000
            let jws = try f.event(step.type, subtype: step.subtype, owner: owner, original: original, signedDate: signed,
                                  expires: step.expires, product: step.product, revoked: step.revoked, autoRenew: step.autoRenew,
                                  billingRetry: step.billingRetry, grace: step.grace, status: step.status)
            let r = s.notify(jws)
            let label = "\(step.type) \(step.subtype ?? "")"
            XCTAssertEqual(r.status, 200, label + String(decoding: r.body, as: UTF8.self))
            XCTAssertEqual(r.json["outcome"], "applied", label)
            let e = entitlement(s, t, h)
            XCTAssertEqual(e["state"], .string(step.state), label)
            XCTAssertEqual(e["pro"], .bool(step.pro), label)
            XCTAssertEqual(e["reason"], .string(step.state), label)
            XCTAssertEqual(e["productId"], .string(step.product), label)
            XCTAssertEqual(e["expiresAt"], .string(Timestamp.format(ms: step.expires)), label)
            XCTAssertEqual(e["graceUntil"], step.grace.map { .string(Timestamp.format(ms: $0)) } ?? .null, label)
            XCTAssertEqual(e["willAutoRenew"], .bool(step.autoRenew == 1), label)
            XCTAssertEqual(e["source"], "notification", label)
            XCTAssertEqual(e["grantedByAccountId"]?.stringValue, owner, label)
            XCTAssertNotNil(e["updatedAt"]?.stringValue.flatMap(Timestamp.parse), label)
        }
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/subscription", token: t).json["state"], "revoked")

        // Types that change no entitlement are recorded and ignored, TEST among them.
        signed += 60_000
        let test = try f.sign(AppStoreFixture.notification(type: "TEST", signedDate: signed, transaction: nil, renewal: nil))
        XCTAssertEqual(s.notify(test).json["outcome"], "ignored")
        XCTAssertEqual(s.notify(test).json["outcome"], "duplicate")
        for type in ["CONSUMPTION_REQUEST", "PRICE_INCREASE", "REFUND_DECLINED"] {
            signed += 60_000
            let jws = try f.event(type, owner: owner, original: original, signedDate: signed, expires: now + 99 * day, status: 1)
            XCTAssertEqual(s.notify(jws).json["outcome"], "ignored", type)
        }
        XCTAssertEqual(entitlement(s, t, h)["state"], "revoked")
    }

    func testForgedNotificationsAreRefusedAndChangeNothing() throws {
        let s = try AppStoreFixture.server()
        defer { s.stop() }
        let original = "1000000000000002"
        let signed = now - day
        let (owner, t, h) = try registered(s, "mum", original: original, signedDate: signed - day, expires: now + 20 * day)
        let foreign = try ES256Signer(privateKeyPEM: ES256Signer.generatePrivateKeyPEM())
        let uuid = UUID().uuidString.lowercased()
        func tx(_ changes: (inout JSONObject) -> Void = { _ in }) -> JSONObject {
            var o = AppStoreFixture.transaction(owner: owner, original: original, signedDate: signed, expires: now + 30 * day,
                                                revoked: now - 60_000)
            changes(&o)
            return o
        }
        let renewal = AppStoreFixture.renewal(original: original, signedDate: signed)
        let goodTx = try f.sign(tx()), goodRenewal = try f.sign(renewal)
        func outer(_ changes: (inout JSONObject) -> Void = { _ in }, transaction: String? = nil, renewalInfo: String? = nil) -> JSONObject {
            var n = AppStoreFixture.notification(type: "REFUND", uuid: uuid, signedDate: signed, transaction: transaction ?? goodTx,
                                                 renewal: renewalInfo ?? goodRenewal, status: 5)
            changes(&n)
            return n
        }
        func data(_ key: String, _ value: JSONValue?) -> (inout JSONObject) -> Void {
            { n in
                guard case .object(var d)? = n["data"] else { return }
                d[key] = value
                n["data"] = .object(d)
            }
        }
        let good = try f.sign(outer())
        let parts = good.split(separator: ".").map(String.init)
        var tampered = outer()
        tampered["notificationType"] = "REFUND_REVERSED"
        let files = try AppStoreFixture.files()
        let invalidOIDLeaf = [try AppStoreFixture.x5c(files.invalidOIDLeaf), f.chain[1], f.chain[2]]
        let invalidOIDIntermediate = [try AppStoreFixture.x5c(files.invalidIntermediateLeaf),
                                      try AppStoreFixture.x5c(files.invalidOIDIntermediate), f.chain[2]]

        let cases: [(String, String, String)] = [
            ("foreign key with the test x5c", try f.sign(outer(), with: foreign), "invalid_signature"),
            ("tampered payload", parts[0] + "." + Base64Codec.encode(JSONValue.object(tampered).serialized(), alphabet: .url)
                + "." + parts[2], "invalid_signature"),
            ("forged nested transaction", try f.sign(outer(transaction: try f.sign(tx(), with: foreign))), "invalid_signature"),
            ("forged nested renewal", try f.sign(outer(renewalInfo: try f.sign(renewal, with: foreign))), "invalid_signature"),
            ("leaf with a wrong OID", try f.sign(outer(), x5c: invalidOIDLeaf), "invalid_chain"),
            ("intermediate with a wrong OID", try f.sign(outer(), x5c: invalidOIDIntermediate), "invalid_chain"),
            ("nested transaction with a wrong OID", try f.sign(outer(transaction: try f.sign(tx(), x5c: invalidOIDLeaf))), "invalid_chain"),
            ("two-certificate x5c", try f.sign(outer(), x5c: Array(f.chain.prefix(2))), "invalid_chain"),
            ("signed outside the chain's validity", try f.sign(outer { $0["signedDate"] = .int(2_600_000_000_000) }), "invalid_chain"),
            ("unsecured", Base64Codec.encode(Array(#"{"alg":"none"}"#.utf8), alphabet: .url) + "." + parts[1] + ".",
             "unsupported_algorithm"),
            ("wrong bundle", try f.sign(outer(data("bundleId", "com.other"))), "wrong_bundle"),
            ("wrong bundle in the transaction", try f.sign(outer(transaction: try f.sign(tx { $0["bundleId"] = "com.other" }))), "wrong_bundle"),
            ("sandbox", try f.sign(outer(data("environment", "Sandbox"))), "wrong_environment"),
            ("xcode", try f.sign(outer(data("environment", "Xcode"))), "wrong_environment"),
            ("sandbox transaction", try f.sign(outer(transaction: try f.sign(tx { $0["environment"] = "Sandbox" }))), "wrong_environment"),
            ("sandbox renewal", try f.sign(outer(renewalInfo: try f.sign(AppStoreFixture.renewal(original: original, signedDate: signed,
                                                                                                 environment: "Sandbox")))), "wrong_environment"),
            ("wrong appAppleId", try f.sign(outer(data("appAppleId", .int(42)))), "wrong_app_apple_id"),
            ("no appAppleId in Production", try f.sign(outer(data("appAppleId", nil))), "wrong_app_apple_id"),
            ("renewal of another purchase", try f.sign(outer(renewalInfo: try f.sign(AppStoreFixture.renewal(original: "9", signedDate: signed)))),
             "renewal_mismatch"),
            ("no product", try f.sign(outer(transaction: try f.sign(tx { $0["productId"] = nil }))), "wrong_product"),
            ("no notificationUUID", try f.sign(outer { $0["notificationUUID"] = nil }), "malformed"),
            ("nested transaction not a JWS", try f.sign(outer(transaction: "abc")), "malformed"),
        ]
        for (label, jws, code) in cases {
            let r = s.notify(jws)
            XCTAssertEqual(r.status, 422, label + " " + String(decoding: r.body, as: UTF8.self))
            XCTAssertEqual(r.code, code, label)
            assertPlainDetail(r, label)
        }
        XCTAssertEqual(entitlement(s, t, h)["state"], "active")

        // The bodies that are not a notification at all.
        let bodies: [(Data, String, Int)] = [
            (Data("not json".utf8), "application/json", 400), (Data("{}".utf8), "application/json", 400),
            (Data(#"{"signedPayload":5}"#.utf8), "application/json", 400),
            (Data(#"{"signedPayload":"a.b.c","extra":1}"#.utf8), "application/json", 400),
            (Data(#"["a.b.c"]"#.utf8), "application/json", 400),
            (Data(("{\"signedPayload\":\"" + String(repeating: "A", count: 70_000) + "\"}").utf8), "application/json", 413),
        ]
        for (body, type, status) in bodies {
            let r = s.call("POST", "/v1/app-store/notifications", rawBody: body, headers: ["Content-Type": type])
            XCTAssertEqual(r.status, status, String(decoding: body.prefix(40), as: UTF8.self))
        }

        // None of the forgeries used up the UUID: the genuine notification still applies.
        XCTAssertEqual(s.notify(good).json["outcome"], "applied")
        XCTAssertEqual(entitlement(s, t, h)["state"], "refunded")
        XCTAssertEqual(s.notify(good).json["outcome"], "duplicate")
        // A replay under the same UUID with other (genuinely signed) content changes nothing either.
        let other = try f.event("REFUND_REVERSED", owner: owner, original: original, signedDate: signed + 1000,
                                expires: now + 30 * day, status: 1, uuid: uuid)
        XCTAssertEqual(s.notify(other).json["outcome"], "duplicate")
        XCTAssertEqual(entitlement(s, t, h)["state"], "refunded")
    }

    /// SUBSCRIBED → DID_RENEW → REFUND → REFUND_REVERSED in all 24 arrival orders ends in
    /// one state; each notification is applied or stale, never both for the newest.
    func testEveryArrivalOrderEndsInTheSameState() throws {
        let s = try AppStoreFixture.server()
        defer { s.stop() }
        let t0 = now - 5 * day
        let e1 = now + 10 * day, e2 = now + 40 * day
        func story(_ owner: String, _ original: String) throws -> [String] {
            [try f.event("SUBSCRIBED", subtype: "INITIAL_BUY", owner: owner, original: original, signedDate: t0 + 1000, expires: e1, status: 1),
             try f.event("DID_RENEW", owner: owner, original: original, signedDate: t0 + 2000, expires: e2, status: 1),
             try f.event("REFUND", owner: owner, original: original, signedDate: t0 + 3000, expires: e2, revoked: t0 + 2500, status: 2),
             try f.event("REFUND_REVERSED", owner: owner, original: original, signedDate: t0 + 4000, expires: e2, status: 1)]
        }
        func permutations(_ a: [Int]) -> [[Int]] {
            a.count <= 1 ? [a] : a.indices.flatMap { i in
                permutations(Array(a[..<i] + a[(i + 1)...])).map { [a[i]] + $0 }
            }
        }
        let orders = permutations([0, 1, 2, 3])
        XCTAssertEqual(orders.count, 24)
        var owners: [(String, String)] = []
        for i in 0..<4 { owners.append(s.signup("parent\(i)")) }
        for (n, order) in orders.enumerated() {
            let (owner, token) = owners[n % owners.count]
            let h = s.household(token, name: "Home \(n)")
            let original = "20000000000\(n + 10)"
            XCTAssertEqual(try upload(s, token, h, owner: owner, original: original, signedDate: t0, expires: e1).status, 200)
            let events = try story(owner, original)
            var newest = -1
            for i in order {
                let expected = i > newest ? "applied" : "stale"
                XCTAssertEqual(s.notify(events[i]).json["outcome"], .string(expected), "order \(order), event \(i)")
                newest = max(newest, i)
            }
            let e = entitlement(s, token, h)
            XCTAssertEqual(e["state"], "active", "order \(order)")
            XCTAssertEqual(e["expiresAt"], .string(Timestamp.format(ms: e2)), "order \(order)")
            // Re-uploading the first, pre-refund transaction changes nothing either.
            XCTAssertEqual(try upload(s, token, h, owner: owner, original: original, signedDate: t0, expires: e1).json["state"], "active")
            XCTAssertEqual(entitlement(s, token, h)["expiresAt"], .string(Timestamp.format(ms: e2)), "order \(order)")
        }
    }

    /// A newer event of the purchase in a product that is not Pro (a crossgrade, an offer,
    /// a resubscription into another product of the group) ends Pro with reason
    /// `wrong_product`, as the App Store's own state does; an older one is stale.
    func testAnEventInAProductThatIsNotProEndsPro() throws {
        let s = try AppStoreFixture.server()
        defer { s.stop() }
        let original = "1000000000000050"
        var signed = now - 10 * day
        let (owner, t, h) = try registered(s, "mum", original: original, signedDate: signed, expires: now + 20 * day)
        let steps: [(type: String, subtype: String?)] = [
            ("DID_CHANGE_RENEWAL_PREF", "UPGRADE"), ("OFFER_REDEEMED", "UPGRADE"), ("SUBSCRIBED", "RESUBSCRIBE"), ("DID_RENEW", nil),
        ]
        for step in steps {
            let label = step.type + " " + (step.subtype ?? "")
            signed += 60_000
            let across = s.notify(try f.event(step.type, subtype: step.subtype, owner: owner, original: original, signedDate: signed,
                                              expires: now + 30 * day, product: "basic.monthly", status: 1))
            XCTAssertEqual(across.status, 200, label + String(decoding: across.body, as: UTF8.self))
            XCTAssertEqual(across.json["outcome"], "applied", label)
            let e = entitlement(s, t, h)
            XCTAssertEqual(e["pro"], false, label)
            XCTAssertEqual(e["reason"], "wrong_product", label)
            XCTAssertEqual(e["productId"], "basic.monthly", label)
            let sub = s.call("GET", "/v1/households/\(h)/subscription", token: t).json
            XCTAssertEqual(sub["status"], "expired", label)
            XCTAssertEqual(sub["productId"], "basic.monthly", label)
            let token = s.call("GET", "/v1/households/\(h)/entitlement/token", token: t)
            XCTAssertEqual(token.status, 200, label)

            // An older Pro event changes nothing; re-uploading the old Pro transaction neither.
            let older = s.notify(try f.event("DID_RENEW", owner: owner, original: original, signedDate: signed - 30_000,
                                             expires: now + 90 * day, status: 1))
            XCTAssertEqual(older.json["outcome"], "stale", label)
            let put = try upload(s, t, h, owner: owner, original: original, signedDate: signed - 30_000, expires: now + 90 * day)
            XCTAssertEqual(put.status, 200, label)
            XCTAssertEqual(put.json["status"], "expired", label)
            XCTAssertEqual(entitlement(s, t, h)["reason"], "wrong_product", label)

            // Back into a Pro product: Pro again.
            signed += 60_000
            XCTAssertEqual(s.notify(try f.event("DID_CHANGE_RENEWAL_PREF", subtype: "UPGRADE", owner: owner, original: original,
                                                signedDate: signed, expires: now + 30 * day, product: "pro.monthly",
                                                status: 1)).json["outcome"], "applied", label)
            XCTAssertEqual(entitlement(s, t, h)["pro"], true, label)
            XCTAssertEqual(entitlement(s, t, h)["reason"], "active", label)
        }

        // A purchase nobody registered, in a product that is not Pro, is kept like any other.
        let unknown = s.notify(try f.event("SUBSCRIBED", subtype: "INITIAL_BUY", owner: owner, original: "1000000000000051",
                                           signedDate: now - day, expires: now + 30 * day, product: "basic.monthly", status: 1))
        XCTAssertEqual(unknown.json["outcome"], "unmatched")
        // An owner cannot register a product that is not Pro.
        let other = try f.sign(AppStoreFixture.transaction(owner: owner, original: "1000000000000052", product: "basic.monthly",
                                                           signedDate: now - day, expires: now + 30 * day))
        let refused = s.call("PUT", "/v1/households/\(h)/subscription", token: t, json: .obj(["signedTransaction": .string(other)]))
        XCTAssertEqual(refused.status, 422)
        XCTAssertEqual(refused.code, "wrong_product")
        assertPlainDetail(refused, "upload of a product that is not Pro")
    }

    /// With both environments allowed, one original transaction id in Sandbox and in
    /// Production is two purchases: an event of one never changes the other.
    func testASandboxEventNeverChangesAProductionPurchase() throws {
        let s = try AppStoreFixture.server { $0.environments = ["Production", "Sandbox"] }
        defer { s.stop() }
        let original = "1000000000000042"
        let (owner, t, h) = try registered(s, "mum", original: original, signedDate: now - 2 * day, expires: now + 20 * day)
        let entitled = entitlement(s, t, h)
        let subscription = s.call("GET", "/v1/households/\(h)/subscription", token: t).json
        XCTAssertEqual(entitled["pro"], true)
        XCTAssertEqual(subscription["environment"], "Production")

        // A newer Sandbox refund of the same id, for another account: nobody registered that purchase.
        let refund = try f.event("REFUND", owner: UUID().uuidString.lowercased(), original: original, signedDate: now - day,
                                 expires: now + 20 * day, revoked: now - day - 60_000, status: 2, environment: "Sandbox")
        let r = s.notify(refund)
        XCTAssertEqual(r.status, 200, String(decoding: r.body, as: UTF8.self))
        XCTAssertEqual(r.json["outcome"], "unmatched")
        XCTAssertEqual(entitlement(s, t, h), entitled)
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/subscription", token: t).json, subscription)
        // Re-uploading the Production transaction still finds the Production purchase.
        let again = try upload(s, t, h, owner: owner, original: original, signedDate: now - 2 * day, expires: now + 20 * day)
        XCTAssertEqual(again.json["environment"], "Production")
        XCTAssertEqual(again.json["state"], "active")
        // Production events still apply to it.
        XCTAssertEqual(s.notify(try f.event("DID_RENEW", owner: owner, original: original, signedDate: now - day + 1,
                                            expires: now + 50 * day, status: 1)).json["outcome"], "applied")
        XCTAssertEqual(entitlement(s, t, h)["expiresAt"], .string(Timestamp.format(ms: now + 50 * day)))

        // The reverse: a Production refund leaves a Sandbox household's purchase alone.
        let (dad, dadToken) = s.signup("dad")
        let cabin = s.household(dadToken, name: "Cabin")
        let tested = "1000000000000043"
        let put = try upload(s, dadToken, cabin, owner: dad, original: tested, signedDate: now - 2 * day, expires: now + 20 * day,
                             environment: "Sandbox")
        XCTAssertEqual(put.json["environment"], "Sandbox")
        XCTAssertEqual(s.notify(try f.event("REFUND", owner: UUID().uuidString.lowercased(), original: tested, signedDate: now - day,
                                            expires: now + 20 * day, revoked: now - day - 60_000, status: 2)).json["outcome"], "unmatched")
        XCTAssertEqual(entitlement(s, dadToken, cabin)["state"], "active")
        XCTAssertEqual(s.notify(try f.event("REFUND", owner: dad, original: tested, signedDate: now - day + 1, expires: now + 20 * day,
                                            revoked: now - day, status: 2, environment: "Sandbox")).json["outcome"], "applied")
        XCTAssertEqual(entitlement(s, dadToken, cabin)["state"], "refunded")
        XCTAssertEqual(entitlement(s, t, h)["state"], "active")
    }

    /// Notifications for a purchase nobody registered are kept and applied at registration;
    /// an old pre-refund upload cannot undo a refund.
    func testUnmatchedNotificationsApplyWhenTheOwnerRegisters() throws {
        let s = try AppStoreFixture.server()
        defer { s.stop() }
        let (owner, t) = s.signup("mum")
        let h = s.household(t)
        let original = "3000000000000001"
        let t0 = now - 5 * day
        XCTAssertEqual(s.notify(try f.event("SUBSCRIBED", owner: owner, original: original, signedDate: t0 + 1000,
                                            expires: now + 30 * day, status: 1)).json["outcome"], "unmatched")
        XCTAssertEqual(s.notify(try f.event("REFUND", owner: owner, original: original, signedDate: t0 + 2000,
                                            expires: now + 30 * day, revoked: t0 + 1500, status: 2)).json["outcome"], "unmatched")
        // The owner's device still holds the purchase-time JWS.
        let put = try upload(s, t, h, owner: owner, original: original, signedDate: t0, expires: now + 30 * day)
        XCTAssertEqual(put.status, 200)
        XCTAssertEqual(put.json["state"], "refunded")
        XCTAssertEqual(put.json["status"], "expired")
        let e = entitlement(s, t, h)
        XCTAssertEqual(e["state"], "refunded"); XCTAssertEqual(e["pro"], false); XCTAssertEqual(e["source"], "notification")
        // From now on the household follows the purchase.
        XCTAssertEqual(s.notify(try f.event("REFUND_REVERSED", owner: owner, original: original, signedDate: t0 + 3000,
                                            expires: now + 30 * day, status: 1)).json["outcome"], "applied")
        XCTAssertEqual(entitlement(s, t, h)["pro"], true)
    }

    func testUploadWithRenewalInfo() throws {
        let s = try AppStoreFixture.server()
        defer { s.stop() }
        let (owner, t) = s.signup("mum")
        let h = s.household(t)
        let original = "4000000000000001"
        let signed = now - day
        func renewal(_ r: JSONObject) throws -> String { try f.sign(r) }
        let inGrace = try renewal(AppStoreFixture.renewal(original: original, signedDate: signed, autoRenew: 1,
                                                          billingRetry: true, grace: now + 3 * day))
        let put = try upload(s, t, h, owner: owner, original: original, signedDate: signed, expires: now - 3_600_000, renewal: inGrace)
        XCTAssertEqual(put.status, 200, String(decoding: put.body, as: UTF8.self))
        XCTAssertEqual(put.json["state"], "inGracePeriod")
        XCTAssertEqual(entitlement(s, t, h)["pro"], true)
        XCTAssertEqual(entitlement(s, t, h)["willAutoRenew"], true)

        var otherAccount = AppStoreFixture.renewal(original: original, signedDate: signed + 1)
        otherAccount["appAccountToken"] = .string(UUID().uuidString)
        let refused: [(String, String)] = [
            (try renewal(AppStoreFixture.renewal(original: "5", signedDate: signed + 1)), "renewal_mismatch"),
            (try renewal(AppStoreFixture.renewal(original: original, signedDate: signed + 1, environment: "Sandbox")), "wrong_environment"),
            (try renewal(otherAccount), "account_mismatch"),
            (try f.sign(AppStoreFixture.renewal(original: original, signedDate: signed + 1), x5c: Array(f.chain.prefix(2))), "invalid_chain"),
        ]
        for (jws, code) in refused {
            let r = try upload(s, t, h, owner: owner, original: original, signedDate: signed + 1, expires: now + day, renewal: jws)
            XCTAssertEqual(r.status, 422, code); XCTAssertEqual(r.code, code)
            assertPlainDetail(r, code)
        }
        XCTAssertEqual(entitlement(s, t, h)["state"], "inGracePeriod")
    }

    /// A notification that cannot be stored (here: a full disk) is 503 with Retry-After, not
    /// 507 and never 200, so the App Store sends it again; once there is room it is taken
    /// (not a duplicate: nothing of it was kept).
    func testANotificationThatCannotBeStoredIs503AndTakenWhenSentAgain() throws {
        try TestServer.requireSQLite("the full disk is SQLite's max_page_count")
        let s = try AppStoreFixture.server()
        defer { s.stop() }
        let (owner, _) = s.signup("mum")
        _ = try s.app.sqliteWriter.sync { db in
            let pages = try db.queryOne("PRAGMA page_count")!.int(0)
            try db.execute("PRAGMA max_page_count = \(pages)")
        }
        var refused: (reply: TestServer.Reply, jws: String)?
        for i in 0..<200 {
            let jws = try f.event("SUBSCRIBED", owner: owner, original: String(6_000_000_000_000_000 + i), signedDate: now - day,
                                  expires: now + day, status: 1)
            let r = s.notify(jws)
            if r.status == 200 {
                XCTAssertEqual(r.json["outcome"], "unmatched")
                continue
            }
            refused = (r, jws)
            break
        }
        guard let refused else { return XCTFail("the disk never filled") }
        XCTAssertEqual(refused.reply.status, 503, String(decoding: refused.reply.body, as: UTF8.self))
        XCTAssertEqual(refused.reply.code, "service_unavailable")
        XCTAssertEqual(refused.reply.header("Retry-After"), "60")

        _ = try s.app.sqliteWriter.sync { db in try db.execute("PRAGMA max_page_count = 1073741823") }
        XCTAssertEqual(s.notify(refused.jws).json["outcome"], "unmatched")
        XCTAssertEqual(s.notify(refused.jws).json["outcome"], "duplicate")
    }

    func testNotificationsAreRateLimitedPerAddress() throws {
        let s = try AppStoreFixture.server { $0.notificationsPerMinute = 2 }
        defer { s.stop() }
        XCTAssertEqual(s.notify("a.b.c").status, 422)
        XCTAssertEqual(s.notify("a.b.c").status, 422)
        let r = s.notify("a.b.c")
        XCTAssertEqual(r.status, 429); XCTAssertEqual(r.code, "rate_limited")
        XCTAssertNotNil(r.header("Retry-After"))
    }

    func testProductionNeedsTheAppAppleId() {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("kidledger-test-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var c = LedgerAppConfiguration(dataDirectory: dir, host: "127.0.0.1", port: 0)
        c.logging = false
        c.bundleId = AppStoreFixture.bundleId
        XCTAssertThrowsError(try LedgerApp(configuration: c)) { XCTAssertTrue("\($0)".contains("app-apple-id")) }
        c.environments = ["Sandbox"]
        XCTAssertNoThrow(try LedgerApp(configuration: c))
    }

    /// `serve` refuses subscription settings it cannot honour, before listening.
    func testServeChecksTheSubscriptionFlags() throws {
        let binary = try ServerProcess.binary()
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("kidledger-flags-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let cases: [([String], Int32, String)] = [
            (["--bundle-id", "com.example.kidledger"], 1, "app-apple-id"),
            (["--app-apple-id", "twelve"], 2, "--app-apple-id"),
            (["--app-apple-id", "0"], 2, "--app-apple-id"),
            (["--entitlement-token-ttl", "99999999999"], 2, "--entitlement-token-ttl"),
            (["--entitlement-token-ttl", "0"], 2, "--entitlement-token-ttl"),
            (["--notifications-per-minute", "0"], 2, "--notifications-per-minute"),
        ]
        for (flags, status, message) in cases {
            let process = Process()
            process.executableURL = binary
            process.arguments = ["serve", "--port", "0", "--data-dir", dir, "--quiet"] + flags
            process.environment = [:]
            let err = Pipe()
            process.standardError = err
            process.standardOutput = Pipe()
            try process.run()
            let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            XCTAssertEqual(process.terminationStatus, status, "\(flags): \(text)")
            XCTAssertTrue(text.contains(message), "\(flags): \(text)")
        }
    }

    /// A feature the operator has not configured is not an outage: 404, never 503.
    func testNotConfiguredNotificationsAre404() throws {
        let s = try TestServer()
        defer { s.stop() }
        let r = s.notify("a.b.c")
        XCTAssertEqual(r.status, 404); XCTAssertEqual(r.code, "subscriptions_not_configured")
    }
}
