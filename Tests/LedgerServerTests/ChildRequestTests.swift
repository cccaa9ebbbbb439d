import Foundation
import LedgerModel
@testable import LedgerCore
@testable import LedgerServer
import LedgerServerTesting
import XCTest

/// Children's requests: made by the child's device or a parent, approved (paying
/// `UUIDv5(N, "request:" + id)`) or declined by a parent; the first decision stands.
final class ChildRequestTests: XCTestCase {
    var s: TestServer!
    override func tearDown() { s?.stop() }

    func start(_ configure: @escaping (inout LedgerAppConfiguration) -> Void = { _ in }) throws {
        s = try TestServer(.router) { configure(&$0) }
    }

    /// A household with one child and a paired device for it.
    func setUpFamily() -> (owner: String, household: String, child: String, device: String) {
        let owner = s.signup(TestServer.handle("mum")).token
        let h = s.household(owner)
        let c = s.child(owner, household: h)
        let code = s.call("POST", "/v1/households/\(h)/children/\(c)/devices", token: owner, json: .obj([:])).json["code"]!
        let device = s.call("POST", "/v1/link-codes/redeem", json: .obj(["code": code])).json["token"]!["secret"]!.stringValue!
        return (owner, h, c, device)
    }

    func balance(_ f: (owner: String, household: String, child: String, device: String)) -> Int64? {
        s.call("GET", "/v1/households/\(f.household)/children/\(f.child)", token: f.owner).json["balanceCents"]?.intValue
    }

    func testPaymentIdVector() {
        // UUIDv5(6f1c7a52-3b0e-4c8e-9d55-2a4b8e1f0c3d, "request:3f0a9db7-21c5-4f2a-9b1e-0c7d3a1e2b44"),
        // the same with the portable SHA-1 and OpenSSL's.
        let id = UUID(uuidString: "3f0a9db7-21c5-4f2a-9b1e-0c7d3a1e2b44")!
        let portable = RequestIDs.payment(requestId: id).lowercased
        XCTAssertEqual(portable, RequestIDs.payment(requestId: id, sha1: .openSSL).lowercased)
        XCTAssertEqual(portable, UUIDv5.make(namespace: LedgerIDs.namespace, name: "request:3f0a9db7-21c5-4f2a-9b1e-0c7d3a1e2b44").lowercased)
        XCTAssertEqual(Array(portable)[14], "5")
    }

    func testChildAsksParentApprovesAndThePaymentIsDeterministic() throws {
        try start()
        let f = setUpFamily()
        let base = "/v1/households/\(f.household)"
        let id = UUID().lowercased
        let made = s.call("POST", "\(base)/children/\(f.child)/requests", token: f.device,
                          json: .obj(["id": .string(id), "kind": "spend", "amountCents": 450, "note": "a book"]))
        XCTAssertEqual(made.status, 201, String(decoding: made.body, as: UTF8.self))
        XCTAssertEqual(made.json["status"]?.stringValue, "pending")
        XCTAssertEqual(made.json["createdBy"], .null)
        XCTAssertEqual(made.json["paymentId"], .null)
        // The same request again: 200, one request. Other content under the id: 409.
        XCTAssertEqual(s.call("POST", "\(base)/children/\(f.child)/requests", token: f.device,
                              json: .obj(["id": .string(id), "kind": "spend", "amountCents": 450, "note": "a book"])).status, 200)
        XCTAssertEqual(s.call("POST", "\(base)/children/\(f.child)/requests", token: f.device,
                              json: .obj(["id": .string(id), "kind": "spend", "amountCents": 451, "note": "a book"])).code, "id_conflict")
        XCTAssertEqual(s.call("GET", "\(base)/children/\(f.child)/requests", token: f.owner).json["items"]?.arrayValue?.count, 1)

        let approved = s.call("POST", "\(base)/requests/\(id)/approve", token: f.owner, json: .obj([:]))
        XCTAssertEqual(approved.status, 200, String(decoding: approved.body, as: UTF8.self))
        let payment = RequestIDs.payment(requestId: UUID(uuidString: id)!).lowercased
        XCTAssertEqual(approved.json["request"]?["status"]?.stringValue, "approved")
        XCTAssertEqual(approved.json["request"]?["paymentId"]?.stringValue, payment)
        XCTAssertEqual(approved.json["transaction"]?["id"]?.stringValue, payment)
        XCTAssertEqual(approved.json["transaction"]?["amountCents"]?.intValue, -450)
        XCTAssertEqual(balance(f), -450)
        // Approving again: the same answer, paid once.
        let again = s.call("POST", "\(base)/requests/\(id)/approve", token: f.owner, json: .obj(["amountCents": 450]))
        XCTAssertEqual(again.status, 200)
        XCTAssertEqual(again.json["transaction"]?["id"]?.stringValue, payment)
        XCTAssertEqual(balance(f), -450)
        // Another decision after the first: 409 request_decided with the stored request.
        let other = s.call("POST", "\(base)/requests/\(id)/approve", token: f.owner, json: .obj(["amountCents": 300]))
        XCTAssertEqual(other.status, 409)
        XCTAssertEqual(other.code, "request_decided")
        XCTAssertEqual(other.json["current"]?["amountCents"]?.intValue, 450)
        XCTAssertEqual(s.call("POST", "\(base)/requests/\(id)/decline", token: f.owner, json: .obj([:])).code, "request_decided")
        XCTAssertEqual(balance(f), -450)
        // The child's device sees the outcome, in its list and its feed.
        let seen = s.call("GET", "\(base)/children/\(f.child)/requests", token: f.device).json["items"]?.arrayValue?.first
        XCTAssertEqual(seen?["status"]?.stringValue, "approved")
        let feed = s.call("GET", "\(base)/children/\(f.child)/changes", token: f.device)
        XCTAssertEqual(feed.json["requests"]?.arrayValue?.map { $0["status"]?.stringValue }, ["approved"])
        XCTAssertEqual(feed.json["transactions"]?.arrayValue?.map { $0["id"]?.stringValue }, [payment])
        // The household feed carries requests too.
        XCTAssertEqual(s.call("GET", "\(base)/changes", token: f.owner).json["requests"]?.arrayValue?.count, 1)
        // `check` reads every request: an approval with its payment is fine; one without is reported.
        XCTAssertEqual(try s.check().problems, [])
        try s.execute("UPDATE requests SET status = 'pending'", [], postgres: "UPDATE requests SET status = 'pending'")
        XCTAssertEqual(try s.check().problems, ["request: \(id) is pending but its payment \(payment) exists"])
    }

    func testChoreApprovedWithAnotherAmountAndDeclineAfterwardsRefused() throws {
        try start()
        let f = setUpFamily()
        let base = "/v1/households/\(f.household)"
        let made = s.call("POST", "\(base)/children/\(f.child)/requests", token: f.device,
                          json: .obj(["kind": "chore", "amountCents": 500, "note": "washed the car"]))
        XCTAssertEqual(made.status, 201)
        let id = made.json["id"]!.stringValue!
        let approved = s.call("POST", "\(base)/requests/\(id)/approve", token: f.owner, json: .obj(["amountCents": 300]))
        XCTAssertEqual(approved.json["transaction"]?["amountCents"]?.intValue, 300)
        XCTAssertEqual(approved.json["request"]?["amountCents"]?.intValue, 300)
        XCTAssertEqual(approved.json["request"]?["requestedCents"]?.intValue, 500)
        XCTAssertEqual(balance(f), 300)
        XCTAssertEqual(s.call("POST", "\(base)/requests/\(id)/approve", token: f.owner, json: .obj([:])).code, "request_decided",
                       "an approval as asked after one of another amount is another decision")
    }

    func testDeclineThenApproveRefusedAndNothingPaid() throws {
        try start()
        let f = setUpFamily()
        let base = "/v1/households/\(f.household)"
        let id = s.call("POST", "\(base)/children/\(f.child)/requests", token: f.owner,
                        json: .obj(["kind": "spend", "amountCents": 100])).json["id"]!.stringValue!
        let declined = s.call("POST", "\(base)/requests/\(id)/decline", token: f.owner, json: .obj(["note": "not today"]))
        XCTAssertEqual(declined.status, 200)
        XCTAssertEqual(declined.json["request"]?["status"]?.stringValue, "declined")
        XCTAssertEqual(declined.json["request"]?["decisionNote"]?.stringValue, "not today")
        XCTAssertEqual(declined.json["transaction"], .null)
        XCTAssertEqual(s.call("POST", "\(base)/requests/\(id)/decline", token: f.owner, json: .obj([:])).status, 200)
        XCTAssertEqual(s.call("POST", "\(base)/requests/\(id)/approve", token: f.owner, json: .obj([:])).code, "request_decided")
        XCTAssertEqual(balance(f), 0)
    }

    func testConcurrentApprovalsPayOnce() throws {
        try start()
        let f = setUpFamily()
        let dad = s.joinedParticipant(f.household, owner: f.owner, handle: TestServer.handle("dad")).token
        let base = "/v1/households/\(f.household)"
        var ids: [String] = []
        for _ in 0..<10 {
            ids.append(s.call("POST", "\(base)/children/\(f.child)/requests", token: f.owner,
                              json: .obj(["kind": "chore", "amountCents": 100])).json["id"]!.stringValue!)
        }
        let statuses = Locked<[Int]>([])
        let server: TestServer = s, requests = ids
        DispatchQueue.concurrentPerform(iterations: requests.count * 2) { i in
            let token = i % 2 == 0 ? f.owner : dad
            let amount: JSONValue = i % 4 < 2 ? .obj([:]) : .obj(["amountCents": 100])
            let r = server.call("POST", "\(base)/requests/\(requests[i / 2])/approve", token: token, json: amount)
            statuses.withLock { $0.append(r.status) }
        }
        XCTAssertEqual(statuses.withLock { $0 }.filter { $0 == 200 }.count, 20)
        XCTAssertEqual(balance(f), 1_000)
        XCTAssertEqual(s.call("GET", "\(base)/children/\(f.child)/transactions", token: f.owner).json["items"]?.arrayValue?.count, 10)
    }

    func testValidationAndAccess() throws {
        try start()
        let f = setUpFamily()
        let base = "/v1/households/\(f.household)/children/\(f.child)/requests"
        for body: JSONValue in [.obj(["kind": "gift", "amountCents": 1]), .obj(["kind": "spend", "amountCents": 0]),
                                .obj(["kind": "spend", "amountCents": -5]), .obj(["kind": "spend"]), .obj(["amountCents": 5]),
                                .obj(["kind": "spend", "amountCents": 100_000_000_001]),
                                .obj(["kind": "spend", "amountCents": 1, "status": "approved"])] {
            XCTAssertEqual(s.call("POST", base, token: f.device, json: body).status, 422, "\(body)")
        }
        let stranger = s.signup(TestServer.handle("eve")).token
        XCTAssertEqual(s.call("POST", base, token: stranger, json: .obj(["kind": "spend", "amountCents": 1])).status, 404)
        XCTAssertEqual(s.call("GET", base, token: stranger).status, 404)
        let id = s.call("POST", base, token: f.device, json: .obj(["kind": "spend", "amountCents": 1])).json["id"]!.stringValue!
        XCTAssertEqual(s.call("POST", "/v1/households/\(f.household)/requests/\(id)/approve", token: stranger, json: .obj([:])).status, 404)
        XCTAssertEqual(s.call("POST", "/v1/households/\(f.household)/requests/\(UUID().lowercased)/approve", token: f.owner,
                              json: .obj([:])).status, 404)
        // A request id of another household is unknown here.
        let g = setUpFamily()
        XCTAssertEqual(s.call("POST", "/v1/households/\(g.household)/requests/\(id)/approve", token: g.owner, json: .obj([:])).status, 404)
    }

    func testRequestCreationIsRateLimitedPerChildToken() throws {
        try start { $0.childRequestsPerHour = 3 }
        let f = setUpFamily()
        let base = "/v1/households/\(f.household)/children/\(f.child)/requests"
        for _ in 0..<3 {
            XCTAssertEqual(s.call("POST", base, token: f.device, json: .obj(["kind": "spend", "amountCents": 1])).status, 201)
        }
        let limited = s.call("POST", base, token: f.device, json: .obj(["kind": "spend", "amountCents": 1]))
        XCTAssertEqual(limited.status, 429)
        XCTAssertEqual(limited.code, "rate_limited")
        XCTAssertNotNil(Int(limited.header("Retry-After") ?? ""))
        // Parents are not limited by the child's device.
        XCTAssertEqual(s.call("POST", base, token: f.owner, json: .obj(["kind": "spend", "amountCents": 1])).status, 201)
    }
}

/// Requests in sync push: an offline parent's approval pushed later, with the payment it
/// wrote; the first decision to reach the server wins on every replica.
final class ChildRequestSyncTests: XCTestCase {
    var s: TestServer!
    override func setUpWithError() throws { s = try TestServer() }
    override func tearDown() { s.stop() }

    func push(_ token: String, _ household: String, _ body: JSONValue) -> [JSONValue] {
        let r = s.call("POST", "/v1/households/\(household)/changes", token: token, json: body)
        XCTAssertEqual(r.status, 200, String(decoding: r.body, as: UTF8.self))
        return r.json["results"]?.arrayValue ?? []
    }

    func testOfflineApprovalsTheFirstWinsAndPaysOnce() {
        let (mumId, mum) = s.signup(TestServer.handle("mum"))
        let h = s.household(mum)
        let c = s.child(mum, household: h)
        let dad = s.joinedParticipant(h, owner: mum, handle: TestServer.handle("dad"))
        let id = UUID().lowercased
        let made = s.call("POST", "/v1/households/\(h)/children/\(c)/requests", token: mum,
                          json: .obj(["id": .string(id), "kind": "chore", "amountCents": 500, "note": "car"]))
        XCTAssertEqual(made.status, 201)
        let payment = RequestIDs.payment(requestId: UUID(uuidString: id)!).lowercased
        func approval(_ by: String, _ cents: Int64, at: String) -> JSONValue {
            .obj(["requests": .array([.obj(["id": .string(id), "childId": .string(c), "kind": "chore", "requestedCents": 500,
                                            "amountCents": .int(cents), "note": "car", "status": "approved",
                                            "decidedBy": .string(by), "decidedAt": .string(at)])]),
                  "transactions": .array([.obj(["id": .string(payment), "childId": .string(c), "amountCents": .int(cents),
                                                "note": "car", "source": "api", "createdAt": .string(at)])])])
        }
        // Dad approved 400 offline; mum approved 500 offline. Dad's reaches the server first.
        let first = push(dad.token, h, approval(dad.id, 400, at: "2026-12-01T10:00:00.000Z"))
        XCTAssertEqual(first.map { $0["status"]?.stringValue }, ["saved", "unchanged"], "\(first)")
        let second = push(mum, h, approval(mumId, 500, at: "2026-12-01T09:00:00.000Z"))
        XCTAssertEqual(second.first?["status"]?.stringValue, "conflict")
        XCTAssertEqual(second.first?["serverRecord"]?["amountCents"]?.intValue, 400)
        XCTAssertEqual(second.first?["serverRecord"]?["decidedBy"]?.stringValue, dad.id)
        XCTAssertEqual(second.last?["status"]?.stringValue, "conflict", "mum's payment is not dad's: the server's is sent back")
        XCTAssertEqual(second.last?["serverRecord"]?["amountCents"]?.intValue, 400)
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/children/\(c)", token: mum).json["balanceCents"]?.intValue, 400)
        // The same approval again: unchanged.
        XCTAssertEqual(push(dad.token, h, approval(dad.id, 400, at: "2026-12-01T10:00:00.000Z")).map { $0["status"]?.stringValue },
                       ["unchanged", "unchanged"])
        // A decision in another member's name is refused.
        XCTAssertEqual(push(dad.token, h, approval(mumId, 400, at: "2026-12-01T10:00:00.000Z")).first?["code"]?.stringValue,
                       "modified_by_mismatch")
    }

    func testAPaymentOfADeclinedRequestIsRejected() {
        let (mumId, mum) = s.signup(TestServer.handle("mum"))
        let h = s.household(mum)
        let c = s.child(mum, household: h)
        let id = s.call("POST", "/v1/households/\(h)/children/\(c)/requests", token: mum,
                        json: .obj(["kind": "spend", "amountCents": 300])).json["id"]!.stringValue!
        XCTAssertEqual(s.call("POST", "/v1/households/\(h)/requests/\(id)/decline", token: mum, json: .obj([:])).status, 200)
        let payment = RequestIDs.payment(requestId: UUID(uuidString: id)!).lowercased
        // An offline approval with its payment, pushed after the decline: both refused, nothing paid.
        let results = push(mum, h, .obj([
            "requests": .array([.obj(["id": .string(id), "childId": .string(c), "kind": "spend", "amountCents": 300, "note": "",
                                      "status": "approved", "decidedBy": .string(mumId), "decidedAt": "2026-12-01T10:00:00.000Z"])]),
            "transactions": .array([.obj(["id": .string(payment), "childId": .string(c), "amountCents": -300, "note": "",
                                          "source": "api", "createdAt": "2026-12-01T10:00:00.000Z"])])]))
        XCTAssertEqual(results.first?["status"]?.stringValue, "conflict")
        XCTAssertEqual(results.first?["serverRecord"]?["status"]?.stringValue, "declined")
        XCTAssertEqual(results.last?["status"]?.stringValue, "rejected")
        XCTAssertEqual(results.last?["code"]?.stringValue, "request_not_approved")
        // Nor by the REST create.
        XCTAssertEqual(s.call("POST", "/v1/households/\(h)/children/\(c)/transactions", token: mum,
                              json: .obj(["id": .string(payment), "amountCents": -300])).code, "request_not_approved")
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/children/\(c)", token: mum).json["balanceCents"]?.intValue, 0)
    }

    func testAnOfflineRequestAndItsDecisionInOnePush() {
        let (mumId, mum) = s.signup(TestServer.handle("mum"))
        let h = s.household(mum)
        let c = s.child(mum, household: h)
        let id = UUID().lowercased
        let results = push(mum, h, .obj(["requests": .array([
            .obj(["id": .string(id), "childId": .string(c), "kind": "chore", "amountCents": 250, "note": "dishes",
                  "status": "approved", "decidedBy": .string(mumId), "decidedAt": "2026-12-01T10:00:00.000Z"]),
            .obj(["id": .string(UUID().lowercased), "childId": .string(UUID().lowercased), "kind": "chore", "amountCents": 1,
                  "status": "pending"]),
            .obj(["id": .string(UUID().lowercased), "childId": .string(c), "kind": "gift", "amountCents": 1, "status": "pending"]),
        ])]))
        XCTAssertEqual(results.map { $0["status"]?.stringValue }, ["saved", "rejected", "rejected"])
        XCTAssertEqual(results.map { $0["code"]?.stringValue }, [nil, "unknown_child", "validation_failed"])
        let feed = s.call("GET", "/v1/households/\(h)/changes", token: mum)
        XCTAssertEqual(feed.json["requests"]?.arrayValue?.first?["status"]?.stringValue, "approved")
        XCTAssertEqual(feed.json["transactions"]?.arrayValue?.first?["amountCents"]?.intValue, 250)
        XCTAssertEqual(feed.json["transactions"]?.arrayValue?.first?["createdAt"]?.stringValue, "2026-12-01T10:00:00.000Z")
    }
}

extension PushTests {
    /// A request made on a child's device wakes every parent's registered device; its
    /// decision wakes the other parents'.
    func testAChildsRequestWakesTheParentsDevices() throws {
        try start()
        let f = family()
        let mumPhone = Self.key(), dadPhone = Self.key()
        XCTAssertEqual(register(f.mum, key: mumPhone).status, 204)
        XCTAssertEqual(register(f.dad.token, key: dadPhone).status, 204)
        let code = s.call("POST", "/v1/households/\(f.household)/children/\(f.child)/devices", token: f.mum, json: .obj([:]))
            .json["code"]!
        let device = s.call("POST", "/v1/link-codes/redeem", json: .obj(["code": code])).json["token"]!["secret"]!.stringValue!
        try eventually("the pairing's code woke nobody") { try outboxRows() == 0 }
        let before = (wakes(for: mumPhone).count, wakes(for: dadPhone).count)
        let made = s.call("POST", "/v1/households/\(f.household)/children/\(f.child)/requests", token: device,
                          json: .obj(["kind": "spend", "amountCents": 450, "note": "A book"]))
        XCTAssertEqual(made.status, 201)
        try eventually("both parents' devices are woken") {
            wakes(for: mumPhone).count > before.0 && wakes(for: dadPhone).count > before.1
        }
        let afterRequest = wakes(for: mumPhone).count
        XCTAssertEqual(s.call("POST", "/v1/households/\(f.household)/requests/\(made.json["id"]!.stringValue!)/approve",
                              token: f.dad.token, json: .obj([:])).status, 200)
        try eventually("Mum's phone is woken by Dad's approval") { wakes(for: mumPhone).count > afterRequest }
    }
}
