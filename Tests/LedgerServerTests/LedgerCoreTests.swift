import Foundation
import LedgerModel
@testable import LedgerCore
@testable import LedgerServer
import LedgerServerTesting
import Synchronization
import XCTest

/// Accounts, tokens, households, children and transactions over real HTTP.
final class LedgerCoreTests: XCTestCase {
    var s: TestServer!
    override func setUpWithError() throws { s = try TestServer() }
    override func tearDown() { s.stop() }

    func testAccountsAndTokens() {
        let (id, token) = s.signup("mum", name: "Mum")
        XCTAssertTrue(token.hasPrefix("kl_") && token.count == 46)
        let dup = s.call("POST", "/v1/accounts", json: .obj(["handle": "mum", "displayName": "Other"]))
        XCTAssertEqual(dup.status, 409); XCTAssertEqual(dup.code, "handle_taken")
        let bad = s.call("POST", "/v1/accounts", json: .obj(["handle": "No Caps", "displayName": ""]))
        XCTAssertEqual(bad.status, 422); XCTAssertEqual(bad.code, "validation_failed")
        XCTAssertNotNil(bad.json["fields"]?["handle"]); XCTAssertNotNil(bad.json["fields"]?["displayName"])

        let me = s.call("GET", "/v1/me", token: token)
        XCTAssertEqual(me.status, 200)
        XCTAssertEqual(me.json["account"]?["id"]?.stringValue, id)
        XCTAssertNil(me.json["token"]?["secret"])

        let second = s.call("POST", "/v1/tokens", token: token, json: .obj(["deviceName": "iPad"]))
        XCTAssertEqual(second.status, 201)
        let secret2 = second.json["secret"]!.stringValue!
        let list = s.call("GET", "/v1/tokens", token: secret2)
        XCTAssertEqual(list.json["items"]?.arrayValue?.count, 2)
        XCTAssertFalse(String(decoding: list.body, as: UTF8.self).contains("kl_"))
        let tokenId = second.json["id"]!.stringValue!
        XCTAssertEqual(s.call("DELETE", "/v1/tokens/\(tokenId)", token: token).status, 204)
        let revoked = s.call("GET", "/v1/me", token: secret2)
        XCTAssertEqual(revoked.status, 401); XCTAssertEqual(revoked.code, "unauthenticated")
        XCTAssertNotNil(revoked.header("WWW-Authenticate"))
        XCTAssertEqual(s.call("DELETE", "/v1/tokens/\(tokenId)", token: token).status, 404)
        XCTAssertEqual(s.call("GET", "/v1/me").status, 401)
        XCTAssertEqual(s.call("GET", "/v1/me", token: "kl_" + String(repeating: "A", count: 43)).status, 401)
    }

    func testClosedRegistration() throws {
        let closed = try TestServer { $0.registration = .closed }
        defer { closed.stop() }
        let r = closed.call("POST", "/v1/accounts", json: .obj(["handle": "mum", "displayName": "Mum"]))
        XCTAssertEqual(r.status, 403); XCTAssertEqual(r.code, "registration_closed")
    }

    func testBadBodies() {
        let (_, t) = s.signup("mum")
        let cases: [(Data, String?, Int, String)] = [
            (Data("{".utf8), "application/json", 400, "invalid_json"),
            (Data(#"{"name":"a","name":"b"}"#.utf8), "application/json", 400, "invalid_json"),
            (Data([0x7B, 0x22, 0x6E, 0x61, 0x6D, 0x65, 0x22, 0x3A, 0x22, 0xC3, 0x28, 0x22, 0x7D]), "application/json", 400, "invalid_json"),
            (Data("[]".utf8), "application/json", 400, "invalid_json"),
            (Data(#"{"name":"a"}"#.utf8), "text/plain", 415, "unsupported_media_type"),
            (Data(#"{"name":123}"#.utf8), "application/json", 422, "validation_failed"),
            (Data(#"{"name":"ok","currency":"dollars"}"#.utf8), "application/json", 422, "validation_failed"),
        ]
        for (body, ct, status, code) in cases {
            var h: [String: String] = [:]
            if let ct { h["Content-Type"] = ct }
            let r = s.call("POST", "/v1/households", token: t, rawBody: body, headers: h)
            XCTAssertEqual(r.status, status, String(decoding: body, as: UTF8.self))
            XCTAssertEqual(r.code, code)
            XCTAssertEqual(r.header("Content-Type"), "application/problem+json")
        }
    }

    func testHouseholdsPutIsIdempotentAndOwned() {
        let (_, mum) = s.signup("mum")
        let (_, other) = s.signup("other")
        let id = "3F0A9DB7-21C5-4F2A-9B1E-0C7D3A1E2B44"
        let a = s.call("PUT", "/v1/households/\(id)", token: mum, json: .obj(["name": "Home", "currency": "EUR"]))
        XCTAssertEqual(a.status, 201)
        XCTAssertEqual(a.json["id"]?.stringValue, id.lowercased())
        XCTAssertEqual(a.json["currency"]?.stringValue, "EUR")
        XCTAssertEqual(s.call("PUT", "/v1/households/\(id)", token: mum, json: .obj(["name": "Home"])).status, 200)
        let c = s.call("PUT", "/v1/households/\(id)", token: other, json: .obj(["name": "Mine"]))
        XCTAssertEqual(c.status, 409); XCTAssertEqual(c.code, "id_conflict")
        XCTAssertEqual(c.json["detail"]?.stringValue, "Household id \(id.lowercased()) belongs to another account.")
        let taken = s.call("POST", "/v1/households", token: mum, json: .obj(["id": .string(id), "name": "Home"]))
        XCTAssertEqual(taken.status, 409)
        XCTAssertEqual(taken.json["detail"]?.stringValue, "A household with id \(id.lowercased()) already exists.")
        XCTAssertEqual(s.call("GET", "/v1/households/\(id)", token: other).status, 404)
        XCTAssertEqual(s.call("GET", "/v1/households/not-a-uuid", token: mum).status, 404)
        let list = s.call("GET", "/v1/households", token: mum)
        XCTAssertEqual(list.json["items"]?.arrayValue?.first?["role"]?.stringValue, "owner")
        XCTAssertEqual(s.call("GET", "/v1/households", token: other).json["items"]?.arrayValue?.count, 0)
    }

    func testPatchWithIfMatch() {
        let (_, t) = s.signup("mum")
        let h = s.household(t)
        let got = s.call("GET", "/v1/households/\(h)", token: t)
        let etag = got.header("ETag")!
        let ok = s.call("PATCH", "/v1/households/\(h)", token: t, json: .obj(["name": "Renamed"]), headers: ["If-Match": etag])
        XCTAssertEqual(ok.status, 200); XCTAssertEqual(ok.json["name"]?.stringValue, "Renamed")
        let stale = s.call("PATCH", "/v1/households/\(h)", token: t, json: .obj(["name": "Again"]), headers: ["If-Match": etag])
        XCTAssertEqual(stale.status, 412); XCTAssertEqual(stale.code, "precondition_failed")
        XCTAssertEqual(stale.json["current"]?["name"]?.stringValue, "Renamed")

        let c = s.child(t, household: h)
        let child = s.call("GET", "/v1/households/\(h)/children/\(c)", token: t)
        let r = s.call("PATCH", "/v1/households/\(h)/children/\(c)", token: t, json: .obj(["archived": true]), headers: ["If-Match": child.header("ETag")!])
        XCTAssertEqual(r.status, 200); XCTAssertEqual(r.json["archived"], .bool(true))
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/children", token: t).json["items"]?.arrayValue?.count, 0)
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/children?includeArchived=true", token: t).json["items"]?.arrayValue?.count, 1)
        let del = s.call("DELETE", "/v1/households/\(h)/children/\(c)", token: t)
        XCTAssertEqual(del.status, 405); XCTAssertNotNil(del.header("Allow"))
    }

    func testTransactionsReplayConflictAndBalance() {
        let (_, t) = s.signup("mum")
        let h = s.household(t)
        let c = s.child(t, household: h)
        let path = "/v1/households/\(h)/children/\(c)/transactions"
        let id = UUID().uuidString.lowercased()
        let first = s.call("POST", path, token: t, json: .obj(["id": .string(id), "amountCents": 500, "note": "pocket money"]))
        XCTAssertEqual(first.status, 201); XCTAssertEqual(first.json["balanceCents"], .int(500))
        XCTAssertEqual(s.call("POST", path, token: t, json: .obj(["id": .string(id), "amountCents": 500, "note": "pocket money"])).status, 200)
        let conflict = s.call("POST", path, token: t, json: .obj(["id": .string(id), "amountCents": 600, "note": "pocket money"]))
        XCTAssertEqual(conflict.status, 409); XCTAssertEqual(conflict.code, "id_conflict")
        let k1 = s.call("POST", path, token: t, json: .obj(["amountCents": -800]), headers: ["Idempotency-Key": "buy-1"])
        let k2 = s.call("POST", path, token: t, json: .obj(["amountCents": -800]), headers: ["Idempotency-Key": "buy-1"])
        XCTAssertEqual(k1.status, 201); XCTAssertEqual(k2.status, 200)
        XCTAssertEqual(k1.json["transaction"]?["id"], k2.json["transaction"]?["id"])
        XCTAssertEqual(k2.json["balanceCents"], .int(-300), "negative balances are allowed")
        for bad: JSONValue in [.obj(["amountCents": 0]), .obj(["amountCents": 100_000_000_001]), .obj(["amountCents": 1.5]),
                               .obj(["amountCents": "5"]), .obj(["amountCents": 5, "source": "magic"]),
                               .obj(["amountCents": 5, "note": .string(String(repeating: "x", count: 501))]),
                               .obj(["amountCents": .number("99999999999999999999")])] {
            let r = s.call("POST", path, token: t, json: bad)
            XCTAssertEqual(r.status, 422, bad.serializedString); XCTAssertEqual(r.code, "validation_failed")
        }
        let hist = s.call("GET", path + "?limit=1", token: t)
        XCTAssertEqual(hist.json["items"]?.arrayValue?.first?["amountCents"], .int(-800), "newest first")
        let next = hist.json["nextCursor"]!.stringValue!
        let page2 = s.call("GET", path + "?limit=1&cursor=\(next)", token: t)
        XCTAssertEqual(page2.json["items"]?.arrayValue?.first?["amountCents"], .int(500))
        XCTAssertEqual(page2.json["nextCursor"], .null)
        XCTAssertEqual(s.call("GET", path + "?limit=0", token: t).status, 422)
        XCTAssertEqual(s.call("GET", path + "?cursor=garbage", token: t).status, 422)
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/children/\(c)", token: t).json["balanceCents"], .int(-300))
    }

    func testChildAfterTheLargestSortOrder() {
        let (_, t) = s.signup("mum")
        let h = s.household(t)
        let a = s.call("POST", "/v1/households/\(h)/children", token: t, json: .obj(["name": "A", "sortOrder": .int(Int64.max)]))
        XCTAssertEqual(a.status, 201)
        let zero = s.call("PATCH", "/v1/households/\(h)/children/\(a.json["id"]!.stringValue!)", token: t, json: .obj(["sortOrder": .number("0.0")]))
        XCTAssertEqual(zero.status, 200, "0.0 is the integer 0")
        XCTAssertEqual(zero.json["sortOrder"], .int(0))
        let b = s.call("POST", "/v1/households/\(h)/children", token: t, json: .obj(["name": "B"]))
        XCTAssertEqual(b.status, 201)
        XCTAssertEqual(b.json["sortOrder"], .int(1))
        let id = a.json["id"]!.stringValue!
        let again = s.call("POST", "/v1/households/\(h)/children", token: t, json: .obj(["id": .string(id), "name": "A"]))
        XCTAssertEqual(again.status, 200, "the same child")
        let other = s.call("POST", "/v1/households/\(h)/children", token: t, json: .obj(["id": .string(id), "name": "Z"]))
        XCTAssertEqual(other.status, 409)
        XCTAssertEqual(other.json["detail"]?.stringValue, "A different child with id \(id) already exists in this household.")
    }

    func testBalanceOverflowIsRefused() {
        let (_, t) = s.signup("mum")
        let h = s.household(t)
        let c = s.child(t, household: h)
        let path = "/v1/households/\(h)/children/\(c)/transactions"
        // Int64.max / 1e11 ≈ 92,233,720 transactions would be needed; seed the cached balance directly.
        try? s.execute("UPDATE children SET balance_cents = ? WHERE id = ?", [.integer(Int64.max - 10), .text(c)],
                       postgres: "UPDATE children SET balance_cents = $1 WHERE id = $2::uuid")
        let r = s.call("POST", path, token: t, json: .obj(["amountCents": 11]))
        XCTAssertEqual(r.status, 422); XCTAssertEqual(r.code, "balance_overflow")
    }

    func testReversalAndUndo() {
        let (_, t) = s.signup("mum")
        let h = s.household(t)
        let c = s.child(t, household: h)
        let path = "/v1/households/\(h)/children/\(c)/transactions"
        let txId = "3f0a9db7-21c5-4f2a-9b1e-0c7d3a1e2b44"
        XCTAssertEqual(s.call("POST", path, token: t, json: .obj(["id": .string(txId), "amountCents": 250])).status, 201)
        let rev = s.call("POST", "/v1/households/\(h)/transactions/\(txId)/reversal", token: t)
        XCTAssertEqual(rev.status, 201)
        XCTAssertEqual(rev.json["transaction"]?["id"]?.stringValue, "eb668038-4871-5198-9e76-336198a58894")
        XCTAssertEqual(rev.json["transaction"]?["amountCents"], .int(-250))
        XCTAssertEqual(rev.json["balanceCents"], .int(0))
        let again = s.call("POST", "/v1/households/\(h)/transactions/\(txId)/reversal", token: t)
        XCTAssertEqual(again.status, 200)
        XCTAssertEqual(again.json["transaction"]?["id"], rev.json["transaction"]?["id"])
        let revOfRev = s.call("POST", "/v1/households/\(h)/transactions/eb668038-4871-5198-9e76-336198a58894/reversal", token: t)
        XCTAssertEqual(revOfRev.status, 422); XCTAssertEqual(revOfRev.code, "not_reversible")
        let none = s.call("POST", "/v1/households/\(h)/children/\(c)/undo-last", token: t)
        XCTAssertEqual(none.status, 422); XCTAssertEqual(none.code, "nothing_to_undo")

        let a = s.call("POST", path, token: t, json: .obj(["amountCents": 100])).json["transaction"]!["id"]!.stringValue!
        let b = s.call("POST", path, token: t, json: .obj(["amountCents": 200])).json["transaction"]!["id"]!.stringValue!
        let changed = s.call("POST", "/v1/households/\(h)/children/\(c)/undo-last", token: t, json: .obj(["expectedTransactionId": .string(a)]))
        XCTAssertEqual(changed.status, 409); XCTAssertEqual(changed.code, "undo_target_changed")
        XCTAssertEqual(changed.json["detail"]?.stringValue, "The newest transaction is \(b), not \(a).")
        XCTAssertEqual(changed.json["current"]?["id"]?.stringValue, b)
        let undo = s.call("POST", "/v1/households/\(h)/children/\(c)/undo-last", token: t, json: .obj(["expectedTransactionId": .string(b)]))
        XCTAssertEqual(undo.status, 201); XCTAssertEqual(undo.json["transaction"]?["reversesId"]?.stringValue, b)
        let undo2 = s.call("POST", "/v1/households/\(h)/children/\(c)/undo-last", token: t)
        XCTAssertEqual(undo2.json["transaction"]?["reversesId"]?.stringValue, a)
        XCTAssertEqual(undo2.json["balanceCents"], .int(0))
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(h)/transactions/\(a)/reversal", token: t).status, 405)
    }

    func testDeleteHouseholdAndCheck() throws {
        let (_, t) = s.signup("mum")
        let h = s.household(t)
        let c = s.child(t, household: h)
        for i in 1...20 {
            s.call("POST", "/v1/households/\(h)/children/\(c)/transactions", token: t, json: .obj(["amountCents": .int(Int64(i))]))
        }
        let report = try s.check()
        XCTAssertTrue(report.ok, report.problems.joined(separator: "\n"))
        XCTAssertEqual(report.transactions, 20)
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(h)", token: t).status, 204)
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)", token: t).status, 404)
    }

    func testCheckDetectsATamperedBalance() throws {
        let (_, t) = s.signup("mum")
        let h = s.household(t)
        let c = s.child(t, household: h)
        s.call("POST", "/v1/households/\(h)/children/\(c)/transactions", token: t, json: .obj(["amountCents": 5]))
        try s.execute("UPDATE children SET balance_cents = 6")
        let report = try s.check()
        XCTAssertFalse(report.ok)
        XCTAssertTrue(report.problems.first?.contains("balance") == true)
    }

    func testOperationsEndpoints() {
        XCTAssertEqual(s.call("GET", "/healthz").status, 200)
        XCTAssertEqual(s.call("GET", "/readyz").status, 200)
        let (_, t) = s.signup("mum")
        _ = s.household(t)
        let m = String(decoding: s.call("GET", "/metrics").body, as: UTF8.self)
        XCTAssertTrue(m.contains("kidledger_http_requests_total"))
        // Two writes (account, household) were committed, each answered after its commit.
        func counter(_ name: String) -> Int? {
            m.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Int($0.split(separator: " ")[1]) }
        }
        XCTAssertGreaterThanOrEqual(counter("kidledger_db_commits_total") ?? 0, 1)
        XCTAssertEqual(counter("kidledger_db_committed_writes_total"), 2)
        let nf = s.call("GET", "/v1/nothing")
        XCTAssertEqual(nf.status, 404); XCTAssertEqual(nf.code, "not_found")
        let wrong = s.call("DELETE", "/healthz")
        XCTAssertEqual(wrong.status, 405); XCTAssertEqual(wrong.code, "method_not_allowed")
        XCTAssertEqual(s.call("GET", "/").status, 200)
    }

    func testBackupWhileServing() throws {
        try TestServer.requireSQLite("an online copy of the SQLite file (PostgreSQL: pg_dump, see testBackupOverPostgreSQLSaysToUsePgDump)")
        let (_, t) = s.signup("mum")
        _ = s.household(t)
        let to = s.dataDirectory + "/backup.sqlite"
        try AdminCommands.backup(s.app.configuration, to: to)
        var c = s.app.configuration
        c.dataDirectory = s.dataDirectory + "/restored"
        try FileManager.default.createDirectory(atPath: c.dataDirectory, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: to, toPath: c.databasePath)
        XCTAssertTrue(try AdminCommands.check(c).ok)
        XCTAssertThrowsError(try AdminCommands.backup(s.app.configuration, to: to), "never overwrites")
    }
}

/// The header fast path for bearer tokens answers exactly as the general parse does.
final class BearerHeaderTests: XCTestCase {
    /// Token hashes from each thread's reused digest context, on many threads at once and
    /// on threads that end (their contexts are freed then), equal an independent SHA-256
    /// (LedgerModel's).
    func testTokenHashesFromReusedContextsAreRight() {
        let failures = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 16) { i in
            for n in 0..<200 {
                let secret = n % 2 == 0 ? TokenSecret.generate() : String(repeating: "x", count: (i * 7 + n) % 300)
                if TokenSecret.sha256(secret) != SHA256.digest(Array(secret.utf8)) { failures.withLock { $0 += 1 } }
            }
        }
        let ended = DispatchSemaphore(value: 0)
        for i in 0..<8 {
            Thread {
                let secret = String(repeating: "y", count: 40 + i)
                if TokenSecret.sha256(secret) != SHA256.digest(Array(secret.utf8)) { failures.withLock { $0 += 1 } }
                ended.signal()
            }.start()
        }
        for _ in 0..<8 { ended.wait() }
        XCTAssertEqual(failures.withLock { $0 }, 0)
        let secret = TokenSecret.generate()
        XCTAssertEqual(TokenSecret.bearerKey("Bearer \(secret)")?.sha256, SHA256.digest(Array(secret.utf8)))
    }

    /// OpenSSL's SHA-1, which names the server's derived ids, gives the portable one's
    /// words for every length around the block boundaries, from many threads (each with its
    /// own context), and the ids derived with it are the ones the SDK derives.
    func testTheServersSHA1IsThePortableOne() {
        @Sendable func hex(_ h: SHA1.State) -> String { [h.0, h.1, h.2, h.3, h.4].map { String(format: "%08x", $0) }.joined() }
        @Sendable func both(_ bytes: [UInt8]) -> (String, String) {
            bytes.withUnsafeBytes { (hex(SHA1.Function.openSSL.words($0)), hex(SHA1.Function.portable.words($0))) }
        }
        XCTAssertEqual(both(Array("abc".utf8)).0, "a9993e364706816aba3e25717850c26c9cd0d89d")
        XCTAssertEqual(both([]).0, "da39a3ee5e6b4b0d3255bfef95601890afd80709")
        let failures = Mutex([Int]())
        DispatchQueue.concurrentPerform(iterations: 8) { i in
            var rng = SystemRandomNumberGenerator()
            for n in 0..<300 {
                let bytes = (0..<((n + i * 37) % 300)).map { _ in UInt8.random(in: 0...255, using: &rng) }
                let (fast, portable) = both(bytes)
                if fast != portable { failures.withLock { $0.append(bytes.count) } }
            }
        }
        XCTAssertEqual(failures.withLock { $0 }, [])
        for _ in 0..<50 {
            let id = UUID()
            XCTAssertEqual(LedgerIDs.reversalID(of: id, sha1: .openSSL), LedgerIDs.reversalID(of: id))
            let key = String(repeating: "k", count: Int.random(in: 1...255))
            XCTAssertEqual(LedgerIDs.idempotencyID(accountId: id, key: key, sha1: .openSSL), LedgerIDs.idempotencyID(accountId: id, key: key))
        }
    }

    func testFastPathAgreesWithTheGeneralParse() {
        let secret = TokenSecret.generate()
        for scheme in ["Bearer", "bearer", "BEARER", "bEaReR"] {
            XCTAssertEqual(TokenSecret.bearerKey("\(scheme) \(secret)")?.sha256, TokenSecret.sha256(secret), scheme)
        }
        // Anything else goes the general way (which accepts some of these and refuses others).
        for header in ["Bearer  \(secret)", "Basic \(secret)", "Bearer \(secret)x", "Bearer \(secret.dropLast())!",
                       "Bearer kx_\(secret.dropFirst(3))", "Bearer Kl_\(secret.dropFirst(3))",
                       "Bearer kl-\(secret.dropFirst(3))", "Bearer@\(secret)", "Beare\u{2}r \(secret)", "Bearer\t\(secret)", "Bearea \(secret)", "Bearer " + String(repeating: "é", count: 23)] {
            XCTAssertNil(TokenSecret.bearerKey(header), header)
        }
    }

    /// The in-memory key of a token: the fast path's and the general parse's agree, its
    /// SHA-256 is the stored one, and two keys are equal only when every byte is.
    func testTokenKeysAreTheWholeSecret() throws {
        let secret = TokenSecret.generate()
        let key = try XCTUnwrap(TokenSecret.TokenKey(secret: secret))
        XCTAssertEqual(TokenSecret.bearerKey("Bearer \(secret)"), key)
        XCTAssertEqual(TokenSecret.TokenKey(secret: Substring("x" + secret).dropFirst()), key)
        XCTAssertEqual(key.sha256, SHA256.digest(Array(secret.utf8)))
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        var bytes = Array(secret)
        for i in 3..<bytes.count {
            let kept = bytes[i]
            bytes[i] = alphabet.first { $0 != kept }!
            let other = try XCTUnwrap(TokenSecret.TokenKey(secret: String(bytes)))
            XCTAssertNotEqual(other, key, "a difference at byte \(i)")
            XCTAssertEqual(Set([other, key]).count, 2)
            bytes[i] = kept
        }
        for bad in ["", String(secret.dropLast()), secret + "A", "kx_" + secret.dropFirst(3), String(secret.dropLast()) + "!"] {
            XCTAssertNil(TokenSecret.TokenKey(secret: bad), bad)
        }
    }
}
