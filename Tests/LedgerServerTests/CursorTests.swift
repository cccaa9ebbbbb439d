import Foundation
import LedgerModel
@testable import LedgerCore
@testable import LedgerServer
import LedgerServerTesting
import StoreKitJWS
import Synchronization
import XCTest

/// List cursors are opaque, bound to their list, and refused anywhere else.
final class CursorTests: XCTestCase {
    func testRoundTripAndBinding() throws {
        let c = Cursor(key: Cursor.randomKey())
        for position: [Int64] in [[0], [1], [123_456_789], [Int64.max], [-5], [1_700_000_000_000, 42]] {
            let raw = c.encode(list: "transactions h1", position)
            XCTAssertEqual(try c.decode(raw, list: "transactions h1", count: position.count), position)
            XCTAssertEqual(raw, c.encode(list: "transactions h1", position), "the same page has the same cursor")
            XCTAssertThrowsError(try c.decode(raw, list: "transactions h2", count: position.count))
            XCTAssertThrowsError(try c.decode(raw, list: "transactions h1 child", count: position.count))
            XCTAssertThrowsError(try c.decode(raw, list: "transactions h1", count: position.count + 1))
            // Every altered byte is refused.
            let bytes = TokenSecret.base64urlDecode(raw)!
            for i in bytes.indices {
                var altered = bytes
                altered[i] ^= 0x01
                XCTAssertThrowsError(try c.decode(TokenSecret.base64url(altered), list: "transactions h1", count: position.count))
            }
        }
        XCTAssertNil(try c.decode(nil, list: "x"))
        XCTAssertNil(try c.decode("", list: "x"))
        for junk in ["!!", "abc", TokenSecret.base64url(Array("t:5".utf8)), String(repeating: "A", count: 32)] {
            XCTAssertThrowsError(try c.decode(junk, list: "transactions h1"), junk)
        }
        // Another server's key: refused.
        let other = Cursor(key: Cursor.randomKey())
        XCTAssertThrowsError(try other.decode(c.encode(list: "l", [7]), list: "l"))
    }

    /// Neighbouring positions give unrelated cursors: nothing shows how far a counter went.
    func testNothingOfThePositionShows() {
        let c = Cursor(key: Cursor.randomKey())
        let a = TokenSecret.base64urlDecode(c.encode(list: "l", [1000]))!
        let b = TokenSecret.base64urlDecode(c.encode(list: "l", [1001]))!
        XCTAssertEqual(a.count, b.count)
        XCTAssertGreaterThan(zip(a, b).filter { $0 != $1 }.count, a.count / 2)
        XCTAssertFalse(String(decoding: a, as: UTF8.self).contains("1000"))
    }

    /// The key is kept in the data directory (owner-only), so cursors outlive a restart.
    func testKeyOutlivesARestart() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("kidledger-cursor-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let raw = Cursor(directory: dir).encode(list: "households a", [3])
        XCTAssertEqual(try Cursor(directory: dir).decode(raw, list: "households a"), 3)
        let mode = try FileManager.default.attributesOfItem(atPath: dir + "/cursor.key")[.posixPermissions] as? Int
        XCTAssertEqual(mode, 0o600)
    }

    /// Server processes sharing one data folder may start at the same moment: they all use
    /// the one key the file ends up with, so a cursor from one is read by every other.
    func testProcessesStartingTogetherAgreeOnOneKey() throws {
        for _ in 0..<20 {
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("kidledger-cursor-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let cursors = Mutex<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 8) { _ in
                let raw = Cursor(directory: dir).encode(list: "households a", [3])
                cursors.withLock { $0.append(raw) }
            }
            let expected = Cursor(directory: dir).encode(list: "households a", [3])
            let made = cursors.withLock { $0 }
            XCTAssertEqual(made.count, 8)
            XCTAssertEqual(Set(made), [expected], "every start uses the key in the file")
            XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), ["cursor.key"], "no partial file left")
        }
    }
}

/// Cursors over HTTP: bound to the household, child and account whose list gave them out.
final class CursorHTTPTests: XCTestCase {
    var s: TestServer!
    override func setUpWithError() throws { s = try TestServer() }
    override func tearDown() { s.stop() }

    func post(_ t: String, _ h: String, _ child: String, _ n: Int) {
        for i in 0..<n {
            XCTAssertEqual(s.call("POST", "/v1/households/\(h)/children/\(child)/transactions", token: t,
                                  json: .obj(["amountCents": .int(Int64(i + 1))])).status, 201)
        }
    }

    func testTransactionCursorsAreBoundToTheirList() throws {
        let (_, t) = s.signup("mum")
        let h1 = s.household(t), h2 = s.household(t, name: "Other")
        let a = s.child(t, household: h1), b = s.child(t, household: h1, name: "Bo"), c = s.child(t, household: h2)
        post(t, h1, a, 3); post(t, h1, b, 3); post(t, h2, c, 3)
        let page = s.call("GET", "/v1/households/\(h1)/transactions?limit=2", token: t)
        let cursor = try XCTUnwrap(page.json["nextCursor"]?.stringValue)
        // The same list pages on.
        let next = s.call("GET", "/v1/households/\(h1)/transactions?limit=2&cursor=\(cursor)", token: t)
        XCTAssertEqual(next.status, 200)
        XCTAssertEqual(next.json["items"]?.arrayValue?.count, 2)
        // Another household's list, a child's list: 422.
        for path in ["/v1/households/\(h2)/transactions", "/v1/households/\(h1)/children/\(a)/transactions"] {
            let r = s.call("GET", "\(path)?cursor=\(cursor)", token: t)
            XCTAssertEqual(r.status, 422, path); XCTAssertEqual(r.code, "validation_failed")
            XCTAssertNotNil(r.json["fields"]?["cursor"])
        }
        let childCursor = try XCTUnwrap(s.call("GET", "/v1/households/\(h1)/children/\(a)/transactions?limit=1", token: t)
            .json["nextCursor"]?.stringValue)
        XCTAssertEqual(s.call("GET", "/v1/households/\(h1)/children/\(b)/transactions?cursor=\(childCursor)", token: t).status, 422)
        XCTAssertEqual(s.call("GET", "/v1/households/\(h1)/children/\(a)/transactions?cursor=\(childCursor)", token: t).status, 200)
        // The old readable form (base64url of "t:<row number>") is not a cursor.
        let bytes = TokenSecret.base64urlDecode(cursor) ?? []
        XCTAssertFalse(String(decoding: bytes, as: UTF8.self).hasPrefix("t:"))
        let forged = TokenSecret.base64url(Array("t:9223372036854775807".utf8))
        XCTAssertEqual(s.call("GET", "/v1/households/\(h1)/transactions?cursor=\(forged)", token: t).status, 422)
    }

    func testHouseholdCursorsAreBoundToTheAccount() throws {
        let (_, mum) = s.signup("mum"), (_, dad) = s.signup("dad")
        for i in 0..<3 { _ = s.household(mum, name: "M\(i)"); _ = s.household(dad, name: "D\(i)") }
        let cursor = try XCTUnwrap(s.call("GET", "/v1/households?limit=1", token: mum).json["nextCursor"]?.stringValue)
        XCTAssertEqual(s.call("GET", "/v1/households?limit=1&cursor=\(cursor)", token: mum).status, 200)
        let r = s.call("GET", "/v1/households?limit=1&cursor=\(cursor)", token: dad)
        XCTAssertEqual(r.status, 422); XCTAssertEqual(r.code, "validation_failed")
        XCTAssertEqual(s.call("GET", "/v1/households?cursor=\(TokenSecret.base64url(Array("h:0".utf8)))", token: mum).status, 422)
    }

    /// `GET /v1/invitations` pages like every list: newest first, each once, cursors bound
    /// to the invitee.
    func testInvitationsArePaged() throws {
        let (_, dad) = s.signup("dad")
        var households: [String] = []
        for i in 0..<5 {
            let (_, owner) = s.signup("owner\(i)")
            let h = s.household(owner, name: "Home \(i)")
            XCTAssertEqual(s.call("POST", "/v1/households/\(h)/share", token: owner).status, 201)
            XCTAssertEqual(s.call("POST", "/v1/households/\(h)/share/participants", token: owner,
                                  json: .obj(["handle": "dad", "permission": "readWrite"])).status, 201)
            households.append(h)
        }
        var seen: [String] = []
        var cursor: String?
        var pages = 0
        repeat {
            let r = s.call("GET", "/v1/invitations?limit=2" + (cursor.map { "&cursor=\($0)" } ?? ""), token: dad)
            XCTAssertEqual(r.status, 200)
            let items = r.json["items"]?.arrayValue ?? []
            XCTAssertLessThanOrEqual(items.count, 2)
            seen += items.compactMap { $0["householdId"]?.stringValue }
            cursor = r.json["nextCursor"]?.stringValue
            pages += 1
        } while cursor != nil && pages < 10
        XCTAssertEqual(pages, 3)
        XCTAssertEqual(seen, households.reversed(), "newest first, each once")
        let all = s.call("GET", "/v1/invitations", token: dad)
        XCTAssertEqual(all.json["items"]?.arrayValue?.count, 5)
        XCTAssertEqual(all.json["nextCursor"], .null)

        let first = try XCTUnwrap(s.call("GET", "/v1/invitations?limit=1", token: dad).json["nextCursor"]?.stringValue)
        let (_, stranger) = s.signup("stranger")
        XCTAssertEqual(s.call("GET", "/v1/invitations?cursor=\(first)", token: stranger).status, 422)
        XCTAssertEqual(s.call("GET", "/v1/invitations?limit=0", token: dad).status, 422)
        XCTAssertEqual(s.call("GET", "/v1/invitations?limit=1001", token: dad).status, 422)
    }

    /// Every page of a list at `path` (with `limit`), following `nextCursor`; the items of
    /// `member` (`items` unless told), and how many pages there were.
    func pages(_ path: String, token: String, limit: Int, member: String = "items") -> (items: [JSONValue], pages: Int) {
        var items: [JSONValue] = [], cursor: String?, pages = 0
        repeat {
            let r = s.call("GET", path + "?limit=\(limit)" + (cursor.map { "&cursor=\($0)" } ?? ""), token: token)
            XCTAssertEqual(r.status, 200, path)
            let page = r.json[member]?.arrayValue ?? []
            XCTAssertLessThanOrEqual(page.count, limit)
            items += page
            cursor = r.json["nextCursor"]?.stringValue
            pages += 1
        } while cursor != nil && pages < 50
        return (items, pages)
    }

    /// An altered copy of `cursor`: one character changed.
    func altered(_ cursor: String) -> String {
        var bytes = Array(cursor.utf8)
        let i = bytes.count / 2
        bytes[i] = bytes[i] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `GET /v1/tokens` pages: oldest first, each live token once, `current` on the
    /// caller's; the cursor is the account's alone; a revoked token leaves the list.
    func testTokensArePaged() throws {
        let (_, mum) = s.signup("mum")
        var ids: [String] = [try XCTUnwrap(s.call("GET", "/v1/me", token: mum).json["token"]?["id"]?.stringValue)]
        for i in 0..<4 {
            ids.append(try XCTUnwrap(s.call("POST", "/v1/tokens", token: mum, json: .obj(["deviceName": .string("D\(i)")]))
                .json["id"]?.stringValue))
        }
        let (items, count) = pages("/v1/tokens", token: mum, limit: 2)
        XCTAssertEqual(count, 3)
        // Oldest first by `createdAt`, then `id` (the contract's order): tokens made in the
        // same millisecond are in id order, so the list is compared with that order.
        let listed = items.compactMap { $0["id"]?.stringValue }
        XCTAssertEqual(listed.count, ids.count, "each once")
        XCTAssertEqual(Set(listed), Set(ids))
        let keys = items.map { ($0["createdAt"]?.stringValue ?? "", $0["id"]?.stringValue ?? "") }
        XCTAssertTrue(zip(keys, keys.dropFirst()).allSatisfy { $0 < $1 }, "oldest first, then by id: \(keys)")
        XCTAssertEqual(listed.first, ids[0], "the signup's token is the oldest")
        XCTAssertEqual(items.filter { $0["current"] == .bool(true) }.compactMap { $0["id"]?.stringValue }, [ids[0]])
        let all = s.call("GET", "/v1/tokens", token: mum)
        XCTAssertEqual(all.json["items"]?.arrayValue?.count, 5, "100 by default")
        XCTAssertEqual(all.json["nextCursor"], .null)

        let cursor = try XCTUnwrap(s.call("GET", "/v1/tokens?limit=2", token: mum).json["nextCursor"]?.stringValue)
        let (_, dad) = s.signup("dad")
        for (token, bad) in [(mum, altered(cursor)), (mum, String(cursor.dropLast())), (dad, cursor), (mum, "%41")] {
            let r = s.call("GET", "/v1/tokens?cursor=\(bad)", token: token)
            XCTAssertEqual(r.status, 422, bad)
            XCTAssertNotNil(r.json["fields"]?["cursor"], bad)
        }
        for limit in ["0", "1001", "-1"] { XCTAssertEqual(s.call("GET", "/v1/tokens?limit=\(limit)", token: mum).status, 422) }
        XCTAssertEqual(s.call("DELETE", "/v1/tokens/\(ids[2])", token: mum).status, 204)
        XCTAssertEqual(pages("/v1/tokens", token: mum, limit: 1).items.compactMap { $0["id"]?.stringValue },
                       listed.filter { $0 != ids[2] }, "the listed order, less the revoked token")
    }

    /// `GET …/sync-status` pages its devices (default 100) with `nextCursor` beside them:
    /// by account, then token, each once; the cursor is the household's alone.
    func testSyncStatusDevicesArePaged() throws {
        let (mumId, mum) = s.signup("mum")
        let (dadId, dad) = s.signup("dad")
        let h = s.household(mum), other = s.household(mum, name: "Other")
        XCTAssertEqual(s.call("POST", "/v1/households/\(h)/share", token: mum).status, 201)
        let invitation = s.call("POST", "/v1/households/\(h)/share/participants", token: mum,
                                json: .obj(["handle": "dad", "permission": "readWrite"])).json["invitationId"]?.stringValue ?? ""
        XCTAssertEqual(s.call("POST", "/v1/invitations/\(invitation)/accept", token: dad).status, 200)
        var devices: [(account: String, token: String)] = []
        for (account, first) in [(mumId, mum), (dadId, dad)] {
            var secrets = [first]
            for i in 0..<2 {
                secrets.append(s.call("POST", "/v1/tokens", token: first, json: .obj(["deviceName": .string("D\(i)")]))
                    .json["secret"]?.stringValue ?? "")
            }
            for secret in secrets {
                XCTAssertEqual(s.call("GET", "/v1/households/\(h)/changes", token: secret).status, 200)
                XCTAssertEqual(s.call("GET", "/v1/households/\(other)/changes", token: secret).status, account == mumId ? 200 : 404)
                devices.append((account, s.call("GET", "/v1/me", token: secret).json["token"]?["id"]?.stringValue ?? ""))
            }
        }
        let expected = devices.sorted { ($0.account, $0.token) < ($1.account, $1.token) }.map(\.token)
        let whole = s.call("GET", "/v1/households/\(h)/sync-status", token: dad)
        XCTAssertEqual(whole.json["devices"]?.arrayValue?.compactMap { $0["tokenId"]?.stringValue }, expected)
        XCTAssertEqual(whole.json["nextCursor"], .null)
        let (items, count) = pages("/v1/households/\(h)/sync-status", token: dad, limit: 4, member: "devices")
        XCTAssertEqual(count, 2)
        XCTAssertEqual(items.compactMap { $0["tokenId"]?.stringValue }, expected, "by account then token, each once")

        let first = s.call("GET", "/v1/households/\(h)/sync-status?limit=4", token: mum)
        XCTAssertEqual(first.json["latestToken"], whole.json["latestToken"])
        let cursor = try XCTUnwrap(first.json["nextCursor"]?.stringValue)
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/sync-status?limit=4&cursor=\(cursor)", token: mum)
            .json["devices"]?.arrayValue?.count, 2)
        let otherCursor = try XCTUnwrap(s.call("GET", "/v1/households/\(other)/sync-status?limit=1", token: mum).json["nextCursor"]?.stringValue)
        for bad in [altered(cursor), otherCursor, String(cursor.prefix(10))] {
            let r = s.call("GET", "/v1/households/\(h)/sync-status?cursor=\(bad)", token: mum)
            XCTAssertEqual(r.status, 422, bad)
            XCTAssertEqual(r.code, "validation_failed", bad)
        }
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/sync-status?limit=1001", token: mum).status, 422)
        // A stranger holding the household's cursor learns nothing: 404 as without it.
        let (_, stranger) = s.signup("stranger")
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/sync-status?cursor=\(cursor)", token: stranger).status, 404)
    }
}
