import Foundation
import LedgerModel
@testable import LedgerServer
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
}
