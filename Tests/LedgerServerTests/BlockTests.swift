import Foundation
import LedgerModel
@testable import LedgerServer
import LedgerServerTesting
import XCTest

/// Invitations as a stranger would abuse them, over HTTP: a flood from many households at
/// one handle, inviting again at once after a decline, probing handles; and the blocks that
/// answer them (`POST …/decline {block}`, `GET /v1/blocks`, `DELETE /v1/blocks/{accountId}`).
final class BlockTests: XCTestCase {
    var servers: [TestServer] = []
    override func tearDown() { servers.forEach { $0.stop() } }

    func server(_ configure: @escaping (inout LedgerAppConfiguration) -> Void = { _ in }) throws -> TestServer {
        let s = try TestServer(configure: configure)
        servers.append(s)
        return s
    }

    // MARK: helpers

    func share(_ s: TestServer, _ owner: String, name: String = "Home") -> String {
        let h = s.household(owner, name: name)
        XCTAssertEqual(s.call("POST", "/v1/households/\(h)/share", token: owner).status, 201)
        return h
    }

    @discardableResult
    func invite(_ s: TestServer, _ owner: String, _ h: String, _ handle: String) -> TestServer.Reply {
        s.call("POST", "/v1/households/\(h)/share/participants", token: owner,
               json: .obj(["handle": .string(handle), "permission": "readWrite"]))
    }

    func pending(_ s: TestServer, _ token: String) -> [JSONValue] {
        s.call("GET", "/v1/invitations?limit=1000", token: token).json["items"]?.arrayValue ?? []
    }

    func decline(_ s: TestServer, _ token: String, _ invitation: JSONValue?, block: Bool) -> TestServer.Reply {
        let id = invitation?["id"]?.stringValue ?? ""
        return s.call("POST", "/v1/invitations/\(id)/decline", token: token, json: block ? .obj(["block": true]) : nil)
    }

    /// The answer with the handle in its detail replaced, to compare two refusals.
    func shape(_ r: TestServer.Reply, handle: String) -> [String] {
        let detail = (r.json["detail"]?.stringValue ?? "").replacingOccurrences(of: handle, with: "<handle>")
        return [String(r.status), r.code ?? "", r.json["type"]?.stringValue ?? "", r.json["title"]?.stringValue ?? "", detail,
                r.header("Content-Type") ?? "", (r.json.objectValue?.pairs.map(\.0).sorted() ?? []).joined(separator: ",")]
    }

    // MARK: the flood

    /// One account invites the victim from 50 households: it holds only its share of the
    /// victim's pending invitations, so the victim's partner can still invite. Declining
    /// without a block leaves room the stranger takes again at once; declining with one
    /// ends the stranger's invitations, present and future.
    func testFloodFromFiftyHouseholdsLeavesRoomForThePartner() throws {
        let s = try server()   // the default quotas: 50 per invitee, 3 per inviter for one invitee
        let (_, stranger) = s.signup("stranger")
        let (_, victim) = s.signup("victim")
        let (_, partner) = s.signup("partner")
        var refused = 0
        var homes: [String] = []
        for i in 0..<50 {
            let h = share(s, stranger, name: "Trap \(i)")
            homes.append(h)
            let r = invite(s, stranger, h, "victim")
            if i < 3 {
                XCTAssertEqual(r.status, 201, "invitation \(i)")
            } else {
                XCTAssertEqual(r.status, 409, "invitation \(i)")
                XCTAssertEqual(r.code, "too_many_invitations")
                XCTAssertEqual(r.json["scope"]?.stringValue, "inviterForInvitee")
                XCTAssertEqual(r.json["limit"]?.intValue, 3)
                refused += 1
            }
        }
        XCTAssertEqual(refused, 47)
        XCTAssertEqual(pending(s, victim).count, 3, "the flood holds three slots")

        // The partner's invitation goes through, and the victim joins.
        let home = share(s, partner, name: "Our home")
        XCTAssertEqual(invite(s, partner, home, "victim").status, 201)
        let theirs = try XCTUnwrap(pending(s, victim).first { $0["householdId"]?.stringValue == home })
        XCTAssertEqual(s.call("POST", "/v1/invitations/\(theirs["id"]!.stringValue!)/accept", token: victim).status, 200)

        // A plain decline frees a slot, which the stranger takes again at once.
        let trap = pending(s, victim).first
        XCTAssertEqual(decline(s, victim, trap, block: false).status, 204)
        XCTAssertEqual(invite(s, stranger, homes[10], "victim").status, 201)
        XCTAssertEqual(pending(s, victim).count, 3)

        // Declining with a block declines every invitation of the stranger, and refuses the next.
        XCTAssertEqual(decline(s, victim, pending(s, victim).first, block: true).status, 204)
        XCTAssertEqual(pending(s, victim).count, 0)
        for h in [homes[0], homes[10], homes[49]] {
            let r = invite(s, stranger, h, "victim")
            XCTAssertEqual(r.status, 404)
            XCTAssertEqual(r.code, "unknown_handle")
        }
        XCTAssertEqual(pending(s, victim).count, 0)
        // The household joined stays joined.
        XCTAssertEqual(s.call("GET", "/v1/households/\(home)", token: victim).status, 200)
    }

    /// A blocked inviter gets exactly the answer a handle nobody has gets: status, code,
    /// title, detail (but for the handle itself), headers and members.
    func testBlockedInviterIsAnsweredLikeAnUnknownHandle() throws {
        let s = try server()
        let (strangerId, stranger) = s.signup("stranger", name: "Stranger Danger")
        let (_, victim) = s.signup("victim")
        let h = share(s, stranger), other = share(s, stranger, name: "Other")
        XCTAssertEqual(invite(s, stranger, h, "victim").status, 201)
        let unknown = invite(s, stranger, h, "nobody-here")
        XCTAssertEqual(unknown.code, "unknown_handle")

        XCTAssertEqual(decline(s, victim, pending(s, victim).first, block: true).status, 204)
        for house in [h, other] {
            let blocked = invite(s, stranger, house, "victim")
            XCTAssertEqual(shape(blocked, handle: "victim"), shape(unknown, handle: "nobody-here"))
        }
        // Nothing about the victim changed for the stranger: the declined row is all it sees.
        let participants = s.call("GET", "/v1/households/\(h)/share", token: stranger).json["participants"]?.arrayValue ?? []
        XCTAssertEqual(participants.map { $0["status"]?.stringValue }, ["declined"])

        // The victim's list holds the block; lifting it lets invitations in again.
        let list = s.call("GET", "/v1/blocks", token: victim)
        XCTAssertEqual(list.status, 200)
        let items = list.json["items"]?.arrayValue ?? []
        XCTAssertEqual(items.count, 1)
        XCTAssertEqual(items.first?["accountId"]?.stringValue, strangerId)
        XCTAssertEqual(items.first?["handle"]?.stringValue, "stranger")
        XCTAssertEqual(items.first?["displayName"]?.stringValue, "Stranger Danger")
        XCTAssertNotNil(items.first?["createdAt"]?.stringValue.flatMap(Timestamp.parse))
        XCTAssertEqual(list.json["nextCursor"], .null)
        XCTAssertEqual(s.call("DELETE", "/v1/blocks/\(strangerId.uppercased())", token: victim).status, 204, "any case")
        XCTAssertEqual(s.call("DELETE", "/v1/blocks/\(strangerId)", token: victim).code, "not_found", "lifted already")
        XCTAssertEqual(s.call("GET", "/v1/blocks", token: victim).json["items"]?.arrayValue?.count, 0)
        XCTAssertEqual(invite(s, stranger, other, "victim").status, 201)
        XCTAssertEqual(invite(s, stranger, h, "victim").status, 201, "the declined one is invited again")
    }

    /// The decline body is optional, strict, and `block: false` or null blocks nobody.
    func testDeclineBody() throws {
        let s = try server()
        let (_, owner) = s.signup("owner")
        let (_, dad) = s.signup("dad")
        let h = share(s, owner)
        XCTAssertEqual(invite(s, owner, h, "dad").status, 201)
        let id = try XCTUnwrap(pending(s, dad).first?["id"]?.stringValue)
        let path = "/v1/invitations/\(id)/decline"
        for bad: JSONValue in [.obj(["block": "yes"]), .obj(["block": 1]), .obj(["reason": "spam"]), .array([])] {
            let r = s.call("POST", path, token: dad, json: bad)
            XCTAssertTrue([400, 422].contains(r.status), "\(bad): \(r.status)")
        }
        XCTAssertEqual(s.call("POST", path, token: dad, rawBody: Data("block=true".utf8), headers: ["Content-Type": "text/plain"]).status, 415)
        XCTAssertEqual(pending(s, dad).count, 1, "a refused decline declined nothing")
        XCTAssertEqual(s.call("POST", path, token: dad, json: .obj(["block": false])).status, 204)
        XCTAssertEqual(s.call("POST", path, token: dad, json: .obj(["block": .null])).status, 204)
        XCTAssertEqual(s.call("POST", path, token: dad).status, 204, "no body, as before")
        XCTAssertEqual(s.call("GET", "/v1/blocks", token: dad).json["items"]?.arrayValue?.count, 0)
        XCTAssertEqual(invite(s, owner, h, "dad").status, 201)
        // Someone else's invitation cannot be declined, with a block or without.
        let again = try XCTUnwrap(pending(s, dad).first?["id"]?.stringValue)
        let (_, stranger) = s.signup("stranger")
        XCTAssertEqual(s.call("POST", "/v1/invitations/\(again)/decline", token: stranger, json: .obj(["block": true])).status, 404)
        XCTAssertEqual(s.call("GET", "/v1/blocks", token: stranger).json["items"]?.arrayValue?.count, 0)
        XCTAssertEqual(pending(s, dad).count, 1)
    }

    /// Blocks are the blocker's alone: nobody else lists or lifts them, and the blocked
    /// account cannot lift a block of itself.
    func testOnlyTheBlockerListsAndLiftsABlock() throws {
        let s = try server()
        let (ownerId, owner) = s.signup("owner")
        let (victimId, victim) = s.signup("victim")
        let (_, stranger) = s.signup("stranger")
        let h = share(s, owner)
        XCTAssertEqual(invite(s, owner, h, "victim").status, 201)
        XCTAssertEqual(decline(s, victim, pending(s, victim).first, block: true).status, 204)

        for token in [owner, stranger] {
            XCTAssertEqual(s.call("GET", "/v1/blocks", token: token).json["items"]?.arrayValue?.count, 0)
            for target in [ownerId, victimId, UUID().lowercased] {
                let r = s.call("DELETE", "/v1/blocks/\(target)", token: token)
                XCTAssertEqual(r.status, 404)
                XCTAssertEqual(r.code, "not_found")
            }
        }
        XCTAssertEqual(s.call("DELETE", "/v1/blocks/not-an-id", token: victim).status, 404)
        XCTAssertEqual(s.call("GET", "/v1/blocks").status, 401)
        XCTAssertEqual(s.call("DELETE", "/v1/blocks/\(ownerId)").status, 401)
        XCTAssertEqual(s.call("GET", "/v1/blocks", token: victim).json["items"]?.arrayValue?.map { $0["accountId"]?.stringValue }, [ownerId])
        XCTAssertEqual(invite(s, owner, h, "victim").code, "unknown_handle", "still blocked")
        // A cursor of the victim's list is no cursor of anyone else's.
        for i in 0..<2 {
            let (_, o) = s.signup("other\(i)")
            let house = share(s, o)
            XCTAssertEqual(invite(s, o, house, "victim").status, 201)
            XCTAssertEqual(decline(s, victim, pending(s, victim).first, block: true).status, 204)
        }
        let cursor = try XCTUnwrap(s.call("GET", "/v1/blocks?limit=1", token: victim).json["nextCursor"]?.stringValue)
        XCTAssertEqual(s.call("GET", "/v1/blocks?limit=1&cursor=\(cursor)", token: victim).status, 200)
        let foreign = s.call("GET", "/v1/blocks?limit=1&cursor=\(cursor)", token: stranger)
        XCTAssertEqual(foreign.status, 422)
        XCTAssertNotNil(foreign.json["fields"]?["cursor"])
    }

    /// `GET /v1/blocks` pages like every list: newest first, each block once; an altered
    /// cursor, another list's cursor or a limit out of range is refused.
    func testBlocksArePaged() throws {
        let s = try server()
        let (_, victim) = s.signup("victim")
        var blocked: [String] = []
        for i in 0..<5 {
            let (id, owner) = s.signup("owner\(i)")
            let h = share(s, owner)
            XCTAssertEqual(invite(s, owner, h, "victim").status, 201)
            XCTAssertEqual(decline(s, victim, pending(s, victim).first, block: true).status, 204)
            blocked.append(id)
            Thread.sleep(forTimeInterval: 0.003)   // one block per millisecond at least: a clear order
        }
        var seen: [String] = [], cursor: String?, pages = 0
        repeat {
            let r = s.call("GET", "/v1/blocks?limit=2" + (cursor.map { "&cursor=\($0)" } ?? ""), token: victim)
            XCTAssertEqual(r.status, 200)
            let items = r.json["items"]?.arrayValue ?? []
            XCTAssertLessThanOrEqual(items.count, 2)
            seen += items.compactMap { $0["accountId"]?.stringValue }
            cursor = r.json["nextCursor"]?.stringValue
            pages += 1
        } while cursor != nil && pages < 10
        XCTAssertEqual(pages, 3)
        XCTAssertEqual(seen, blocked.reversed(), "newest first, each once")
        XCTAssertEqual(s.call("GET", "/v1/blocks", token: victim).json["items"]?.arrayValue?.count, 5)

        let first = try XCTUnwrap(s.call("GET", "/v1/blocks?limit=2", token: victim).json["nextCursor"]?.stringValue)
        var bytes = Array(first.utf8)
        bytes[bytes.count / 2] = bytes[bytes.count / 2] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let tokensCursor = try XCTUnwrap(tokensCursor(s, victim))
        for bad in [String(decoding: bytes, as: UTF8.self), String(first.dropLast(2)), tokensCursor, "not-a-cursor"] {
            let r = s.call("GET", "/v1/blocks?cursor=\(bad)", token: victim)
            XCTAssertEqual(r.status, 422, bad)
            XCTAssertEqual(r.code, "validation_failed", bad)
        }
        for limit in ["0", "1001", "two"] { XCTAssertEqual(s.call("GET", "/v1/blocks?limit=\(limit)", token: victim).status, 422) }
    }

    /// A cursor of the account's token list (a list of the same shape, not this one).
    func tokensCursor(_ s: TestServer, _ token: String) -> String? {
        _ = s.call("POST", "/v1/tokens", token: token, json: .obj(["deviceName": "Spare"]))
        return s.call("GET", "/v1/tokens?limit=1", token: token).json["nextCursor"]?.stringValue
    }

    // MARK: probing handles

    /// Invitations that find no account are limited per inviting account: past the limit
    /// every invitation of that account is 429 with `Retry-After`, whoever it names. A
    /// blocked inviter's refusals count the same (they must look the same). Other accounts
    /// keep their own allowance, and invitations that find their account do not count.
    func testFailedHandleLookupsAreRateLimitedPerAccount() throws {
        let s = try server { $0.failedHandleLookupsPerMinute = 3 }
        let (_, prober) = s.signup("prober")
        for handle in ["dad", "gran", "aunt", "uncle"] { _ = s.signup(handle) }
        let h = share(s, prober), h2 = share(s, prober, name: "Second")
        for handle in ["dad", "gran", "aunt", "uncle"] { XCTAssertEqual(invite(s, prober, h, handle).status, 201) }
        XCTAssertEqual(invite(s, prober, h, "dad").status, 200, "already invited: found, not counted")
        for guess in ["alice", "bob", "carol"] { XCTAssertEqual(invite(s, prober, h, guess).code, "unknown_handle") }
        for handle in ["dave", "dad"] {
            let r = invite(s, prober, h2, handle)
            XCTAssertEqual(r.status, 429, handle)
            XCTAssertEqual(r.code, "rate_limited")
            let retry = try XCTUnwrap(r.header("Retry-After").flatMap { Int($0) })
            XCTAssertTrue((1...60).contains(retry), "\(retry)")
        }
        XCTAssertEqual(s.call("GET", "/v1/households/\(h2)/share", token: prober).json["participants"]?.arrayValue?.count, 0,
                       "a refused invitation invited no one")

        // Another account has its own allowance; a block's refusals count like unknown handles.
        let (_, other) = s.signup("other")
        let (_, victim) = s.signup("victim")
        let o1 = share(s, other), o2 = share(s, other, name: "Two")
        XCTAssertEqual(invite(s, other, o1, "victim").status, 201)
        XCTAssertEqual(decline(s, victim, pending(s, victim).first, block: true).status, 204)
        for house in [o1, o2, o1] { XCTAssertEqual(invite(s, other, house, "victim").code, "unknown_handle") }
        XCTAssertEqual(invite(s, other, o2, "dad").status, 429)
    }

    /// The limiter's window: a minute from the first failure, then a fresh allowance;
    /// 0 is no limit; many accounts cost bounded memory.
    func testHandleLookupWindow() {
        final class Clock: @unchecked Sendable { var now: Double = 1000 }
        let clock = Clock()
        let limiter = HandleLookupLimiter(limit: 2, now: { clock.now })
        XCTAssertNil(limiter.retryAfter("a"))
        limiter.fail("a")
        clock.now += 10
        limiter.fail("a")
        XCTAssertEqual(limiter.retryAfter("a"), 50)
        XCTAssertNil(limiter.retryAfter("b"), "per account")
        clock.now += 49.5
        XCTAssertEqual(limiter.retryAfter("a"), 1)
        clock.now += 0.5
        XCTAssertNil(limiter.retryAfter("a"), "the minute is over")
        limiter.fail("a")
        XCTAssertNil(limiter.retryAfter("a"), "a fresh window")

        let off = HandleLookupLimiter(limit: 0, now: { clock.now })
        for _ in 0..<10 { off.fail("a") }
        XCTAssertNil(off.retryAfter("a"))
        XCTAssertEqual(off.windowCount, 0)

        let many = HandleLookupLimiter(limit: 1, now: { clock.now })
        for i in 0..<HandleLookupLimiter.maxWindows { many.fail("account\(i)") }
        clock.now += 61
        many.fail("late")
        XCTAssertEqual(many.windowCount, 1, "finished windows are forgotten")
    }
}
