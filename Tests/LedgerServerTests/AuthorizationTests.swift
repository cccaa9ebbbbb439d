import Foundation
import LedgerModel
@testable import LedgerCore
@testable import LedgerServer
import LedgerServerTesting
import XCTest

/// Asserts `AuthorizationMatrix` over HTTP, keeps it complete against `openapi.yaml` and
/// the router, and keeps `docs/authorization.md` in step with it.
final class AuthorizationTests: XCTestCase {
    typealias Caller = AuthorizationMatrix.Caller

    static let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// A household with one caller of every kind.
    struct World {
        var household = "", child = "", transaction = "", invitation = "", ownerTokenId = "", ownerId = ""
        var readWriteId = "", strangerHandle = "", identityId = "", ownerSubject = "", schedule = ""
        var request = "", childDevice = ""
        var tokens: [Caller: String] = [:]
    }

    var s: TestServer!
    var counter = 0
    var jwks = ""

    override func setUpWithError() throws {
        jwks = try IdentityFixture.keySetFile()
        s = try TestServer { [jwks] in
            $0.oidcProviders = [IdentityFixture.spec(jwks)]
            $0.authFailuresPerMinute = 1_000_000
            // Every caller redeems and recovers from one address (the limits have their own tests).
            $0.accountAccess.linkCodeFailuresPerMinute = 0
            $0.accountAccess.recoveryFailuresPerMinute = 0
            $0.bundleId = "com.example.kidledger"
            $0.productIds = ["com.example.kidledger.pro"]
            $0.appAppleId = 1_234_567_890
            // Registration never calls the gateway; nothing listens there.
            $0.pushGateways = ["http://127.0.0.1:9/_matrix/push/v1/notify"]
        }
    }
    override func tearDown() {
        s.stop()
        try? FileManager.default.removeItem(atPath: jwks)
    }

    func unique(_ prefix: String) -> String {
        counter += 1
        return "\(prefix)\(counter)"
    }

    /// A fixture step that did not answer as expected fails the test (it is never skipped).
    struct FixtureFailure: Error, CustomStringConvertible { let description: String }

    func must(_ r: TestServer.Reply, _ status: Int, _ what: String) throws -> TestServer.Reply {
        guard r.status == status else {
            throw FixtureFailure(description: "fixture step failed: \(what): \(r.status) \(String(decoding: r.body, as: UTF8.self))")
        }
        return r
    }

    func makeWorld() throws -> World {
        var w = World()
        let (ownerId, owner) = s.signup(unique("owner"))
        w.tokens[.owner] = owner
        w.ownerId = ownerId
        w.household = s.household(owner)
        w.child = s.child(owner, household: w.household)
        w.transaction = try must(s.call("POST", "/v1/households/\(w.household)/children/\(w.child)/transactions", token: owner,
                                        json: .obj(["amountCents": 500])), 201, "transaction").json["transaction"]!["id"]!.stringValue!
        w.schedule = try must(s.call("POST", "/v1/households/\(w.household)/children/\(w.child)/schedules", token: owner,
                                     json: .obj(["kind": "allowance", "amountCents": 500, "cadence": "monthly",
                                                 "firstDate": "2030-01-31", "timeZone": "UTC"])), 201, "schedule").json["id"]!.stringValue!
        // A pending request, a device paired for the child (for DELETE …/devices/{tokenId}), the
        // matrix's child device, and a device of another child.
        w.request = try must(s.call("POST", "/v1/households/\(w.household)/children/\(w.child)/requests", token: owner,
                                    json: .obj(["kind": "chore", "amountCents": 500])), 201, "request").json["id"]!.stringValue!
        func pair(_ child: String) throws -> (id: String, secret: String) {
            let code = try must(s.call("POST", "/v1/households/\(w.household)/children/\(child)/devices", token: owner,
                                       json: .obj([:])), 201, "child link code").json["code"]!
            let r = try must(s.call("POST", "/v1/link-codes/redeem", json: .obj(["code": code])), 201, "pair")
            return (r.json["token"]!["id"]!.stringValue!, r.json["token"]!["secret"]!.stringValue!)
        }
        w.childDevice = try pair(w.child).id
        w.tokens[.child] = try pair(w.child).secret
        w.tokens[.otherChild] = try pair(s.child(owner, household: w.household, name: "Ben")).secret
        w.ownerTokenId = try must(s.call("POST", "/v1/tokens", token: owner, json: .obj(["deviceName": "Spare"])), 201, "token").json["id"]!.stringValue!
        _ = try must(s.call("POST", "/v1/households/\(w.household)/share", token: owner), 201, "share")
        w.ownerSubject = IdentityFixture.subject()
        w.identityId = try must(s.call("POST", "/v1/me/identities", token: owner,
                                       json: .obj(["provider": "test", "idToken": .string(IdentityFixture.token(w.ownerSubject))])),
                                201, "link an identity").json["id"]!.stringValue!

        func invite(_ caller: Caller, permission: String) throws -> (id: String, token: String, invitation: String) {
            let handle = unique(caller.rawValue.lowercased())
            let (id, token) = s.signup(handle)
            let r = try must(s.call("POST", "/v1/households/\(w.household)/share/participants", token: owner,
                                    json: .obj(["handle": .string(handle), "permission": .string(permission)])), 201, "invite")
            w.tokens[caller] = token
            return (id, token, r.json["invitationId"]!.stringValue!)
        }
        func accept(_ p: (id: String, token: String, invitation: String)) throws {
            _ = try must(s.call("POST", "/v1/invitations/\(p.invitation)/accept", token: p.token), 200, "accept")
        }
        let rw = try invite(.readWrite, permission: "readWrite")
        try accept(rw)
        w.readWriteId = rw.id
        try accept(try invite(.readOnly, permission: "readOnly"))
        w.invitation = try invite(.invitee, permission: "readWrite").invitation
        let declined = try invite(.declined, permission: "readWrite")
        // Declined, and the owner blocked.
        _ = try must(s.call("POST", "/v1/invitations/\(declined.invitation)/decline", token: declined.token,
                            json: .obj(["block": true])), 204, "decline")
        let revoked = try invite(.revoked, permission: "readWrite")
        try accept(revoked)
        _ = try must(s.call("DELETE", "/v1/households/\(w.household)/share/participants/\(revoked.id)", token: owner), 204, "revoke")
        let departed = try invite(.departed, permission: "readWrite")
        try accept(departed)
        _ = try must(s.call("DELETE", "/v1/households/\(w.household)/share/participants/\(departed.id)", token: departed.token), 204, "leave")
        w.strangerHandle = unique("stranger")
        w.tokens[.stranger] = s.signup(w.strangerHandle).token
        // A signed-out device of the read-write participant.
        let spare = try must(s.call("POST", "/v1/tokens", token: rw.token, json: .obj(["deviceName": "Old phone"])), 201, "rw token")
        _ = try must(s.call("DELETE", "/v1/tokens/\(spare.json["id"]!.stringValue!)", token: rw.token), 204, "sign out")
        w.tokens[.revokedToken] = spare.json["secret"]!.stringValue!
        return w
    }

    func concrete(_ path: String, _ w: World) -> String {
        // `{accountId}`: the read-write participant; under /v1/blocks the owner, whom the
        // declined invitee blocked (the world's one block).
        let account = path.hasPrefix("/v1/blocks/") ? w.ownerId : w.readWriteId
        let token = path.contains("/devices/") ? w.childDevice : w.ownerTokenId
        return path.replacingOccurrences(of: "{id}", with: w.household)
            .replacingOccurrences(of: "{requestId}", with: w.request)
            .replacingOccurrences(of: "{childId}", with: w.child)
            .replacingOccurrences(of: "{txId}", with: w.transaction)
            .replacingOccurrences(of: "{scheduleId}", with: w.schedule)
            .replacingOccurrences(of: "{accountId}", with: account)
            .replacingOccurrences(of: "{invitationId}", with: w.invitation)
            .replacingOccurrences(of: "{tokenId}", with: token)
            .replacingOccurrences(of: "{identityId}", with: w.identityId)
            .replacingOccurrences(of: "{provider}", with: "test")
    }

    func substitute(_ v: JSONValue, _ w: World) -> JSONValue {
        switch v {
        case .string("$unique"): return .string(unique("new"))
        case .string("$strangerHandle"): return .string(w.strangerHandle)
        case .string("$idToken"): return .string(IdentityFixture.token(IdentityFixture.subject()))
        case .string("$ownerIdToken"): return .string(IdentityFixture.token(w.ownerSubject))
        case .string("$readWriteId"): return .string(w.readWriteId)
        case .object(let o):
            var out = JSONObject()
            for (k, x) in o.pairs { out[k] = substitute(x, w) }
            return .object(out)
        case .array(let a): return .array(a.map { substitute($0, w) })
        default: return v
        }
    }

    func call(_ row: AuthorizationMatrix.Row, _ caller: Caller, _ w: World) -> TestServer.Reply {
        s.call(row.method, concrete(row.path, w), token: w.tokens[caller], json: row.body.map { substitute($0, w) })
    }

    // MARK: tests

    /// Every cell of the matrix over HTTP; a row whose route the router does not serve fails.
    func testMatrix() throws {
        let router = Routes.make()
        let shared = try makeWorld()
        var checked = 0
        for row in AuthorizationMatrix.rows {
            guard case .found = router.match(method: row.method, path: concrete(row.path, shared)) else {
                XCTFail("AuthorizationMatrix has \(row.method) \(row.path) but the router does not serve it")
                continue
            }
            for caller in Caller.allCases {
                let want = row.expect[caller]!
                let isolated = row.mutates && (200..<300).contains(want.status)
                let w = isolated ? try makeWorld() : shared
                let r = call(row, caller, w)
                checked += 1
                let label = "\(row.method) \(row.path) as \(caller.rawValue)"
                XCTAssertEqual(r.status, want.status, "\(label): \(String(decoding: r.body, as: UTF8.self))")
                if let code = want.code, r.status == want.status {
                    XCTAssertEqual(r.code, code, label)
                }
                if r.status == 401 { XCTAssertNotNil(r.header("WWW-Authenticate"), label) }
            }
        }
        XCTAssertGreaterThan(checked, 0)
    }

    /// Malformed ids in any path position are 404 `not_found` for a caller who could use
    /// the endpoint, before any query runs (never 400/500, never a hint).
    func testMalformedPathIdsAre404() throws {
        let router = Routes.make()
        let w = try makeWorld()
        for row in AuthorizationMatrix.rows where row.path.contains("{") {
            guard case .found = router.match(method: row.method, path: concrete(row.path, w)) else {
                XCTFail("the router does not serve \(row.method) \(row.path)")
                continue
            }
            for param in ["{id}", "{childId}", "{txId}", "{scheduleId}", "{accountId}", "{invitationId}", "{tokenId}", "{identityId}",
                          "{requestId}"]
            where row.path.contains(param) {
                let path = concrete(row.path.replacingOccurrences(of: param, with: "x%27%20OR%201%3D1"), w)
                let caller: Caller = param == "{invitationId}" ? .invitee : .owner
                let r = s.call(row.method, path, token: w.tokens[caller], json: row.body.map { substitute($0, w) })
                XCTAssertEqual(r.status, 404, "\(row.method) \(row.path) with a malformed \(param)")
                XCTAssertEqual(r.code, "not_found", "\(row.method) \(row.path) with a malformed \(param)")
            }
        }
    }

    /// `(method, path)` of every operation under `paths:` in openapi.yaml (line-based).
    static func openAPIOperations() throws -> [String] {
        let text = try String(contentsOf: repo.appendingPathComponent("openapi.yaml"), encoding: .utf8)
        var ops: [String] = []
        var inPaths = false
        var path: String?
        let methods: Set<String> = ["get", "put", "post", "patch", "delete", "head", "options"]
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = String(raw)
            if line.hasPrefix("paths:") { inPaths = true; continue }
            guard inPaths else { continue }
            if let f = line.first, f != " ", f != "#" { inPaths = false; continue }
            if line.hasPrefix("  /"), !line.hasPrefix("   "), line.hasSuffix(":") {
                path = String(line.dropFirst(2).dropLast())
                continue
            }
            if let path, line.hasPrefix("    "), !line.hasPrefix("     ") {
                let key = line.dropFirst(4).split(separator: ":").first.map(String.init) ?? ""
                if methods.contains(key) { ops.append("\(key.uppercased()) \(path)") }
            }
        }
        return ops
    }

    /// A new endpoint in openapi.yaml or in the router without a row fails here.
    func testEveryEndpointHasARow() throws {
        let rows = Set(AuthorizationMatrix.rows.map { "\($0.method) \($0.path)" })
        XCTAssertEqual(rows.count, AuthorizationMatrix.rows.count, "duplicate rows")
        let spec = try Self.openAPIOperations()
        XCTAssertGreaterThan(spec.count, 30, "openapi.yaml parsed")
        for op in spec where !rows.contains(op) {
            XCTFail("openapi.yaml has \(op) but AuthorizationMatrix has no row for it")
        }
        for row in rows where !spec.contains(row) {
            XCTFail("AuthorizationMatrix has \(row) but openapi.yaml does not")
        }
        for route in Routes.make().routes {
            let op = "\(route.method) \(route.template)"
            XCTAssertTrue(rows.contains(op), "the router serves \(op) but AuthorizationMatrix has no row for it")
        }
    }

    /// `docs/authorization.md` is the matrix rendered; `KIDLEDGER_WRITE_DOCS=1` rewrites it.
    func testDocumentIsUpToDate() throws {
        let url = Self.repo.appendingPathComponent("docs/authorization.md")
        let rendered = AuthorizationMatrix.markdown()
        if ProcessInfo.processInfo.environment["KIDLEDGER_WRITE_DOCS"] == "1" {
            try rendered.write(to: url, atomically: true, encoding: .utf8)
            return
        }
        let committed = (try? String(contentsOf: url, encoding: .utf8)) ?? ""
        XCTAssertEqual(committed, rendered,
                       "docs/authorization.md is stale: run KIDLEDGER_WRITE_DOCS=1 swift test --filter LedgerServerTests.AuthorizationTests")
    }
}
