import Foundation
import LedgerModel
@testable import LedgerServer
import LedgerServerTesting
import XCTest

/// The private share over real HTTP: two and three parents through every transition,
/// probing reads and writes at each step.
final class SharingTests: XCTestCase {
    var s: TestServer!
    override func setUpWithError() throws { s = try TestServer() }
    override func tearDown() { s.stop() }

    // MARK: helpers

    @discardableResult
    func invite(_ h: String, owner: String, handle: String, permission: String = "readWrite",
                file: StaticString = #filePath, line: UInt = #line) -> TestServer.Reply {
        s.call("POST", "/v1/households/\(h)/share/participants", token: owner,
               json: .obj(["handle": .string(handle), "permission": .string(permission)]))
    }

    /// Probes one read and one write as `token`; returns their statuses and codes.
    func probe(_ h: String, child: String, _ token: String) -> (read: Int, readCode: String?, write: Int, writeCode: String?) {
        let r = s.call("GET", "/v1/households/\(h)/children", token: token)
        let w = s.call("POST", "/v1/households/\(h)/children/\(child)/transactions", token: token,
                       json: .obj(["amountCents": 100, "note": "probe"]))
        return (r.status, r.code, w.status, w.code)
    }

    func assertMember(_ h: String, child: String, _ token: String, canWrite: Bool, file: StaticString = #filePath, line: UInt = #line) {
        let p = probe(h, child: child, token)
        XCTAssertEqual(p.read, 200, "read", file: file, line: line)
        if canWrite {
            XCTAssertEqual(p.write, 201, "write", file: file, line: line)
        } else {
            XCTAssertEqual(p.write, 403, "write", file: file, line: line); XCTAssertEqual(p.writeCode, "read_only", file: file, line: line)
        }
    }

    func assertRevoked(_ h: String, child: String, _ token: String, file: StaticString = #filePath, line: UInt = #line) {
        let p = probe(h, child: child, token)
        XCTAssertEqual(p.read, 403, file: file, line: line); XCTAssertEqual(p.readCode, "access_revoked", file: file, line: line)
        XCTAssertEqual(p.write, 403, file: file, line: line); XCTAssertEqual(p.writeCode, "access_revoked", file: file, line: line)
    }

    func assertStranger(_ h: String, child: String, _ token: String, file: StaticString = #filePath, line: UInt = #line) {
        let p = probe(h, child: child, token)
        XCTAssertEqual(p.read, 404, file: file, line: line); XCTAssertEqual(p.readCode, "not_found", file: file, line: line)
        XCTAssertEqual(p.write, 404, file: file, line: line); XCTAssertEqual(p.writeCode, "not_found", file: file, line: line)
    }

    func households(_ token: String) -> [JSONValue] { s.call("GET", "/v1/households", token: token).json["items"]?.arrayValue ?? [] }

    func seq(_ h: String) throws -> Int64 {
        try s.int("SELECT seq FROM households WHERE id = ?", [.text(h)], postgres: "SELECT seq FROM households WHERE id = $1::uuid")
    }

    // MARK: tests

    func testShareLifecycle() throws {
        let (_, mum) = s.signup("mum", name: "Mum")
        let (dadId, dad) = s.signup("dad", name: "Dad")
        let (granId, gran) = s.signup("gran", name: "Gran")
        let h = s.household(mum, name: "Home")
        let child = s.child(mum, household: h)

        // Not shared yet.
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/share", token: mum).code, "not_shared")
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/share", token: mum).status, 404)
        XCTAssertEqual(invite(h, owner: mum, handle: "dad").status, 409)
        XCTAssertEqual(invite(h, owner: mum, handle: "dad").code, "not_shared")
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(h)/share", token: mum).code, "not_shared")
        XCTAssertEqual(s.call("POST", "/v1/households/\(h)/share", token: dad).status, 404)

        // Share.
        let created = s.call("POST", "/v1/households/\(h)/share", token: mum)
        XCTAssertEqual(created.status, 201)
        XCTAssertEqual(created.json["householdId"]?.stringValue, h)
        XCTAssertEqual(created.json["publicPermission"]?.stringValue, "none")
        XCTAssertEqual(created.json["participants"]?.arrayValue?.count, 0)
        XCTAssertEqual(s.call("POST", "/v1/households/\(h)/share", token: mum, json: .obj([:])).status, 200)
        XCTAssertEqual(s.call("POST", "/v1/households/\(h)/share", token: mum, json: .obj(["publicPermission": "none"])).status, 200)
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)", token: mum).json["shared"]?.boolValue, true)

        // Invite: errors first.
        XCTAssertEqual(invite(h, owner: mum, handle: "nobody").code, "unknown_handle")
        XCTAssertEqual(invite(h, owner: mum, handle: "nobody").status, 404)
        XCTAssertEqual(invite(h, owner: mum, handle: "mum").status, 422)
        XCTAssertEqual(invite(h, owner: mum, handle: "mum").code, "cannot_invite_self")
        XCTAssertEqual(invite(h, owner: mum, handle: "dad", permission: "admin").code, "validation_failed")
        XCTAssertEqual(invite(h, owner: mum, handle: "Not A Handle").code, "validation_failed")
        XCTAssertEqual(s.call("POST", "/v1/households/\(h)/share/participants", token: mum, json: .obj(["handle": "dad"])).code, "validation_failed")
        XCTAssertEqual(invite(h, owner: dad, handle: "gran").status, 404, "a stranger cannot invite")

        let inv = invite(h, owner: mum, handle: "dad")
        XCTAssertEqual(inv.status, 201)
        XCTAssertEqual(inv.json["accountId"]?.stringValue, dadId)
        XCTAssertEqual(inv.json["handle"]?.stringValue, "dad")
        XCTAssertEqual(inv.json["displayName"]?.stringValue, "Dad")
        XCTAssertEqual(inv.json["role"]?.stringValue, "participant")
        XCTAssertEqual(inv.json["permission"]?.stringValue, "readWrite")
        XCTAssertEqual(inv.json["status"]?.stringValue, "invited")
        let invitation = try XCTUnwrap(inv.json["invitationId"]?.stringValue)
        let again = invite(h, owner: mum, handle: "dad", permission: "readOnly")
        XCTAssertEqual(again.status, 200, "already invited: unchanged")
        XCTAssertEqual(again.json["invitationId"]?.stringValue, invitation)
        XCTAssertEqual(again.json["permission"]?.stringValue, "readWrite")

        // Invited is not a member yet.
        assertStranger(h, child: child, dad)
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/share", token: dad).status, 404)
        XCTAssertTrue(households(dad).isEmpty)
        let list = s.call("GET", "/v1/invitations", token: dad)
        XCTAssertEqual(list.status, 200)
        XCTAssertEqual(list.json["nextCursor"], .null)
        let item = try XCTUnwrap(list.json["items"]?.arrayValue?.first)
        XCTAssertEqual(item["id"]?.stringValue, invitation)
        XCTAssertEqual(item["householdId"]?.stringValue, h)
        XCTAssertEqual(item["householdName"]?.stringValue, "Home")
        XCTAssertEqual(item["ownerDisplayName"]?.stringValue, "Mum")
        XCTAssertEqual(item["permission"]?.stringValue, "readWrite")
        XCTAssertNotNil(item["invitedAt"]?.stringValue.flatMap(Timestamp.parse))
        XCTAssertEqual(s.call("GET", "/v1/invitations", token: gran).json["items"]?.arrayValue?.count, 0)

        // Guessed or stolen invitation ids: 404 for everyone but the invitee.
        for t in [mum, gran] {
            XCTAssertEqual(s.call("POST", "/v1/invitations/\(invitation)/accept", token: t).status, 404)
            XCTAssertEqual(s.call("POST", "/v1/invitations/\(invitation)/decline", token: t).status, 404)
        }
        XCTAssertEqual(s.call("POST", "/v1/invitations/\(UUID().lowercased)/accept", token: dad).status, 404)
        XCTAssertEqual(s.call("POST", "/v1/invitations/not-a-uuid/accept", token: dad).status, 404)
        XCTAssertEqual(s.call("POST", "/v1/invitations/\(invitation)/accept").status, 401)

        // Accept (upper-case id accepted too).
        let before = try seq(h)
        let acc = s.call("POST", "/v1/invitations/\(invitation.uppercased())/accept", token: dad, json: .obj([:]))
        XCTAssertEqual(acc.status, 200)
        XCTAssertEqual(acc.json["id"]?.stringValue, h)
        XCTAssertEqual(acc.json["role"]?.stringValue, "participant")
        XCTAssertEqual(acc.json["permission"]?.stringValue, "readWrite")
        XCTAssertGreaterThan(try seq(h), before)
        XCTAssertEqual(s.call("POST", "/v1/invitations/\(invitation)/accept", token: dad).status, 200, "accept is repeatable")
        XCTAssertEqual(s.call("POST", "/v1/invitations/\(invitation)/decline", token: dad).status, 404, "accepted cannot be declined")
        XCTAssertEqual(s.call("GET", "/v1/invitations", token: dad).json["items"]?.arrayValue?.count, 0)
        assertMember(h, child: child, dad, canWrite: true)
        let dadView = households(dad)
        XCTAssertEqual(dadView.count, 1)
        XCTAssertEqual(dadView.first?["role"]?.stringValue, "participant")
        XCTAssertEqual(dadView.first?["permission"]?.stringValue, "readWrite")
        XCTAssertEqual(households(mum).first?["role"]?.stringValue, "owner")
        let shared = s.call("GET", "/v1/households/\(h)/share", token: dad)
        XCTAssertEqual(shared.status, 200)
        XCTAssertEqual(shared.json["participants"]?.arrayValue?.first?["status"]?.stringValue, "accepted")

        // A participant may not manage the share.
        XCTAssertEqual(s.call("POST", "/v1/households/\(h)/share", token: dad).code, "owner_only")
        XCTAssertEqual(invite(h, owner: dad, handle: "gran").code, "owner_only")
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(h)/share", token: dad).code, "owner_only")
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(h)", token: dad).code, "owner_only")
        XCTAssertEqual(s.call("PATCH", "/v1/households/\(h)/share/participants/\(dadId)", token: dad,
                              json: .obj(["permission": "readWrite"])).code, "owner_only")

        // Third parent, read-only from the start.
        let granInv = invite(h, owner: mum, handle: "gran", permission: "readOnly")
        XCTAssertEqual(granInv.status, 201)
        let granInvitation = granInv.json["invitationId"]!.stringValue!
        XCTAssertEqual(s.call("POST", "/v1/invitations/\(granInvitation)/accept", token: dad).status, 404, "dad cannot accept for gran")
        XCTAssertEqual(s.call("POST", "/v1/invitations/\(granInvitation)/accept", token: gran).status, 200)
        assertMember(h, child: child, gran, canWrite: false)
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(h)/share/participants/\(dadId)", token: gran).code, "owner_only",
                       "gran cannot remove dad")

        // Downgrade dad.
        let seqBeforeDowngrade = try seq(h)
        let down = s.call("PATCH", "/v1/households/\(h)/share/participants/\(dadId)", token: mum, json: .obj(["permission": "readOnly"]))
        XCTAssertEqual(down.status, 200)
        XCTAssertEqual(down.json["permission"]?.stringValue, "readOnly")
        XCTAssertGreaterThan(try seq(h), seqBeforeDowngrade)
        assertMember(h, child: child, dad, canWrite: false)
        XCTAssertEqual(households(dad).first?["permission"]?.stringValue, "readOnly")
        XCTAssertEqual(s.call("PATCH", "/v1/households/\(h)", token: dad, json: .obj(["name": "Dad's"])).code, "read_only")
        XCTAssertEqual(s.call("PATCH", "/v1/households/\(h)/share/participants/\(dadId)", token: mum,
                              json: .obj(["permission": "everything"])).code, "validation_failed")
        XCTAssertEqual(s.call("PATCH", "/v1/households/\(h)/share/participants/\(UUID().lowercased)", token: mum,
                              json: .obj(["permission": "readOnly"])).status, 404)

        // Revoke dad.
        let seqBeforeRevoke = try seq(h)
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(h)/share/participants/\(dadId)", token: mum).status, 204)
        XCTAssertGreaterThan(try seq(h), seqBeforeRevoke)
        assertRevoked(h, child: child, dad)
        XCTAssertTrue(households(dad).isEmpty)
        XCTAssertEqual(s.call("POST", "/v1/invitations/\(invitation)/accept", token: dad).status, 404, "a revoked invitation is spent")
        XCTAssertEqual(s.call("PATCH", "/v1/households/\(h)/share/participants/\(dadId)", token: mum,
                              json: .obj(["permission": "readWrite"])).status, 404, "revoked participants have no permission to change")
        assertMember(h, child: child, gran, canWrite: false)

        // Re-invite dad: a new invitation id; the old one stays dead.
        let re = invite(h, owner: mum, handle: "dad", permission: "readWrite")
        XCTAssertEqual(re.status, 201)
        XCTAssertEqual(re.json["status"]?.stringValue, "invited")
        let reInvitation = re.json["invitationId"]!.stringValue!
        XCTAssertNotEqual(reInvitation, invitation)
        assertStranger(h, child: child, dad)
        XCTAssertEqual(s.call("POST", "/v1/invitations/\(invitation)/accept", token: dad).status, 404)
        XCTAssertEqual(s.call("POST", "/v1/invitations/\(reInvitation)/accept", token: dad).status, 200)
        assertMember(h, child: child, dad, canWrite: true)

        // Dad leaves.
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(h)/share/participants/\(dadId)", token: dad).status, 204)
        assertRevoked(h, child: child, dad)
        let afterLeave = s.call("GET", "/v1/households/\(h)/share", token: mum).json["participants"]?.arrayValue ?? []
        XCTAssertEqual(afterLeave.first { $0["accountId"]?.stringValue == dadId }?["status"]?.stringValue, "left")
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(h)/share/participants/\(dadId)", token: dad).code, "access_revoked")

        // Invite dad again, he declines; then again, he accepts.
        let third = invite(h, owner: mum, handle: "dad").json["invitationId"]!.stringValue!
        XCTAssertEqual(s.call("POST", "/v1/invitations/\(third)/decline", token: gran).status, 404)
        XCTAssertEqual(s.call("POST", "/v1/invitations/\(third)/decline", token: dad).status, 204)
        XCTAssertEqual(s.call("POST", "/v1/invitations/\(third)/decline", token: dad).status, 204, "decline is repeatable")
        XCTAssertEqual(s.call("POST", "/v1/invitations/\(third)/accept", token: dad).status, 404, "declined cannot be accepted")
        assertStranger(h, child: child, dad)
        let fourth = invite(h, owner: mum, handle: "dad")
        XCTAssertEqual(fourth.status, 201)
        XCTAssertEqual(s.call("POST", "/v1/invitations/\(fourth.json["invitationId"]!.stringValue!)/accept", token: dad).status, 200)
        assertMember(h, child: child, dad, canWrite: true)

        // Stop sharing: everyone loses access, the owner keeps everything.
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(h)/share", token: mum).status, 204)
        assertRevoked(h, child: child, dad)
        assertRevoked(h, child: child, gran)
        assertMember(h, child: child, mum, canWrite: true)
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)", token: mum).json["shared"]?.boolValue, false)
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/share", token: mum).code, "not_shared")
        XCTAssertTrue(households(gran).isEmpty)
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(h)/share/participants/\(granId)", token: gran).code, "access_revoked")

        // Sharing again keeps the history; participants must be invited again.
        let resumed = s.call("POST", "/v1/households/\(h)/share", token: mum)
        XCTAssertEqual(resumed.status, 201)
        XCTAssertEqual(Set(resumed.json["participants"]?.arrayValue?.compactMap { $0["status"]?.stringValue } ?? []), ["revoked"])
        assertRevoked(h, child: child, dad)
        XCTAssertEqual(invite(h, owner: mum, handle: "gran").status, 201)
    }

    func testPublicLinksAreRefused() {
        let (_, mum) = s.signup("mum")
        let h = s.household(mum)
        for value: JSONValue in ["readOnly", "readWrite", "anyone"] {
            let r = s.call("POST", "/v1/households/\(h)/share", token: mum, json: .obj(["publicPermission": value]))
            XCTAssertEqual(r.status, 422); XCTAssertEqual(r.code, "public_sharing_disabled")
        }
        XCTAssertEqual(s.call("POST", "/v1/households/\(h)/share", token: mum, json: .obj(["publicPermission": 1])).code, "validation_failed")
        XCTAssertEqual(s.call("POST", "/v1/households/\(h)/share", token: mum, json: .obj(["publicLink": true])).code, "validation_failed")
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/share", token: mum).code, "not_shared", "a refused attempt shares nothing")
        XCTAssertEqual(s.call("POST", "/v1/households/\(h)/share", token: mum, json: .obj(["publicPermission": .null])).status, 201)
        let again = s.call("POST", "/v1/households/\(h)/share", token: mum, json: .obj(["publicPermission": "readOnly"]))
        XCTAssertEqual(again.code, "public_sharing_disabled")
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/share", token: mum).json["publicPermission"]?.stringValue, "none")
    }

    func testParticipantsSeeDeletedHouseholdAsGone() {
        let (_, mum) = s.signup("mum")
        let (_, dad) = s.signup("dad")
        let h = s.household(mum)
        s.call("POST", "/v1/households/\(h)/share", token: mum)
        let inv = invite(h, owner: mum, handle: "dad").json["invitationId"]!.stringValue!
        XCTAssertEqual(s.call("POST", "/v1/invitations/\(inv)/accept", token: dad).status, 200)
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(h)", token: mum).status, 204)
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)", token: dad).status, 404)
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/share", token: dad).status, 404)
        XCTAssertEqual(s.call("POST", "/v1/invitations/\(inv)/accept", token: dad).status, 404)
    }

    func testPendingInviteeCanWithdrawAndInvitationsAreNewestFirst() {
        let (_, mum) = s.signup("mum", name: "Mum")
        let (_, aunt) = s.signup("aunt", name: "Aunt")
        let (dadId, dad) = s.signup("dad")
        let h1 = s.household(mum, name: "First")
        let h2 = s.household(aunt, name: "Second")
        s.call("POST", "/v1/households/\(h1)/share", token: mum)
        s.call("POST", "/v1/households/\(h2)/share", token: aunt)
        XCTAssertEqual(invite(h1, owner: mum, handle: "dad", permission: "readOnly").status, 201)
        Thread.sleep(forTimeInterval: 0.01)
        XCTAssertEqual(invite(h2, owner: aunt, handle: "dad").status, 201)
        let items = s.call("GET", "/v1/invitations", token: dad).json["items"]?.arrayValue ?? []
        XCTAssertEqual(items.map { $0["householdName"]?.stringValue }, ["Second", "First"])
        XCTAssertEqual(items.map { $0["ownerDisplayName"]?.stringValue }, ["Aunt", "Mum"])
        XCTAssertEqual(items.last?["permission"]?.stringValue, "readOnly")
        // Withdrawing a pending invitation by leaving.
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(h1)/share/participants/\(dadId)", token: dad).status, 204)
        XCTAssertEqual(s.call("GET", "/v1/invitations", token: dad).json["items"]?.arrayValue?.count, 1)
        // The owner revoking a pending invitation.
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(h2)/share/participants/\(dadId)", token: aunt).status, 204)
        XCTAssertEqual(s.call("GET", "/v1/invitations", token: dad).json["items"]?.arrayValue?.count, 0)
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(h2)/share/participants/\(UUID().lowercased)", token: aunt).status, 404)
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(h2)/share/participants/not-an-id", token: aunt).status, 404)
        // Neither made dad a member, so neither household reveals itself to him: 404, not 403.
        for h in [h1, h2] {
            let r = s.call("GET", "/v1/households/\(h)/children", token: dad)
            XCTAssertEqual(r.status, 404); XCTAssertEqual(r.code, "not_found")
        }
        // Stopping a share withdraws pending invitations the same way, while a participant
        // who had accepted loses access (403).
        let (_, gran) = s.signup("gran")
        let (_, uncle) = s.signup("uncle")
        XCTAssertEqual(invite(h1, owner: mum, handle: "gran").status, 201)
        let accepted = invite(h1, owner: mum, handle: "uncle").json["invitationId"]!.stringValue!
        XCTAssertEqual(s.call("POST", "/v1/invitations/\(accepted)/accept", token: uncle).status, 200)
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(h1)/share", token: mum).status, 204)
        XCTAssertEqual(s.call("GET", "/v1/households/\(h1)", token: gran).status, 404)
        XCTAssertEqual(s.call("GET", "/v1/households/\(h1)", token: uncle).code, "access_revoked")
        // Invited again after access was revoked: not a member until accepting again.
        s.call("POST", "/v1/households/\(h1)/share", token: mum)
        let again = invite(h1, owner: mum, handle: "uncle").json["invitationId"]!.stringValue!
        XCTAssertEqual(s.call("GET", "/v1/households/\(h1)", token: uncle).status, 404)
        XCTAssertEqual(s.call("POST", "/v1/invitations/\(again)/accept", token: uncle).status, 200)
        XCTAssertEqual(s.call("GET", "/v1/households/\(h1)", token: uncle).status, 200)
    }

    func testAuthenticationFailuresAreThrottled() throws {
        let limited = try TestServer { $0.authFailuresPerMinute = 3 }
        defer { limited.stop() }
        let (_, mum) = limited.signup("mum")
        let bad = "kl_" + String(repeating: "B", count: 43)
        for _ in 0..<3 { XCTAssertEqual(limited.call("GET", "/v1/invitations", token: bad).status, 401) }
        // Past the limit, failing tokens are 429 (malformed ones too); a valid token from
        // the same address is still served, and a request without a token is plain 401.
        for token in [bad, "not-a-token"] {
            let r = limited.call("GET", "/v1/invitations", token: token)
            XCTAssertEqual(r.status, 429); XCTAssertEqual(r.code, "rate_limited")
            XCTAssertNotNil(r.header("Retry-After").flatMap(Int.init))
        }
        XCTAssertEqual(limited.call("GET", "/v1/invitations", token: mum).status, 200)
        XCTAssertEqual(limited.call("GET", "/v1/me", token: mum).status, 200)
        XCTAssertEqual(limited.call("GET", "/v1/invitations").status, 401)
    }

    /// Runs the server with access lines on, standard output redirected to a file, and
    /// checks that neither bearer tokens nor query strings reach the log.
    func testLogsCarryNoSecrets() throws {
        let logged = try TestServer(.live) { $0.logging = true; $0.logLevel = "info" }
        let path = logged.dataDirectory + "-stdout.log"
        fflush(nil)
        let saved = dup(1)
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        XCTAssertGreaterThanOrEqual(fd, 0)
        dup2(fd, 1)
        let (_, mum) = logged.signup("mum")
        let h = logged.household(mum)
        logged.call("GET", "/v1/households/\(h)/share?token=\(mum)", token: mum)
        logged.call("POST", "/v1/households/\(h)/share", token: mum, json: .obj(["publicPermission": .string(mum)]))
        logged.call("GET", "/v1/invitations", token: "kl_" + String(repeating: "C", count: 43))
        Thread.sleep(forTimeInterval: 0.3)
        logged.app.services.logger.flush()
        fflush(nil)
        dup2(saved, 1)
        close(fd); close(saved)
        logged.stop()
        let text = try String(contentsOfFile: path, encoding: .utf8)
        try? FileManager.default.removeItem(atPath: path)
        XCTAssertTrue(text.contains("/v1/households/\(h)/share"), "access lines are written")
        XCTAssertFalse(text.contains("kl_"), "no token in the log")
        XCTAssertFalse(text.contains("token="), "no query string in the log")
    }
}
