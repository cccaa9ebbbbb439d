import XCTest
@testable import LedgerCore
@testable import LedgerServer
@testable import LedgerStorageSQLite

/// Each route declares the thread it runs on where it is registered (`Router.Execution`).
final class RouterExecutionTests: XCTestCase {
    func testEveryRouteDeclaresWhereItRuns() {
        var declared: [String: Router.Execution] = [:]
        for route in Routes.make().routes { declared[route.method + " " + route.template] = route.execution }
        XCTAssertEqual(declared["GET /healthz"], .inline)
        // Long or blocking work: the feed and batch push, sync status, readiness, App Store
        // verification and entitlement signing, ID tokens (a verification may fetch the
        // provider's key set).
        let workers = Set(declared.filter { $0.value == .worker }.keys)
        XCTAssertEqual(workers, [
            "GET /readyz", "GET /v1/households/{id}/changes", "POST /v1/households/{id}/changes",
            "GET /v1/households/{id}/sync-status", "POST /v1/households/{id}/reconcile", "PUT /v1/households/{id}/subscription",
            "GET /v1/households/{id}/subscription", "DELETE /v1/households/{id}/subscription",
            "GET /v1/households/{id}/entitlement", "GET /v1/households/{id}/entitlement/token",
            "POST /v1/app-store/notifications",
            "POST /v1/auth/{provider}", "GET /v1/me/identities", "POST /v1/me/identities",
            "GET /v1/households/{id}/children/{childId}/changes",
        ])
        let queued = Set(declared.filter { $0.value == .queuedWrite }.keys)
        XCTAssertEqual(queued, [
            "POST /v1/households/{id}/children", "PATCH /v1/households/{id}/children/{childId}",
            "POST /v1/households/{id}/children/{childId}/transactions",
            "POST /v1/households/{id}/transactions/{txId}/reversal",
            "POST /v1/households/{id}/children/{childId}/undo-last",
            "POST /v1/households/{id}/children/{childId}/schedules", "PATCH /v1/households/{id}/schedules/{scheduleId}",
            "DELETE /v1/households/{id}/schedules/{scheduleId}",
            "POST /v1/households/{id}/children/{childId}/pots", "PATCH /v1/households/{id}/pots/{potId}",
            "DELETE /v1/households/{id}/pots/{potId}", "POST /v1/households/{id}/children/{childId}/transfers",
            "POST /v1/households/{id}/children/{childId}/devices", "DELETE /v1/households/{id}/children/{childId}/devices/{tokenId}",
            "POST /v1/households/{id}/children/{childId}/requests", "POST /v1/households/{id}/requests/{requestId}/approve",
            "POST /v1/households/{id}/requests/{requestId}/decline",
        ])
        // Reads whose only storage access is an answer kept by the household's stamp.
        let kept = Set(declared.filter { $0.value == .keptRead }.keys)
        XCTAssertEqual(kept, ["GET /v1/households/{id}/children", "GET /v1/households/{id}/children/{childId}"])
        XCTAssertEqual(declared["GET /v1/households/{id}/children/{childId}/transactions"], .short)
    }

    func testWhereEachKindRuns() {
        let small = 100, large = Router.Execution.loopBodyLimit + 1
        for local in [true, false] {
            XCTAssertEqual(Router.Execution.inline.place(bodyBytes: large, storageIsLocal: local), .loop)
            XCTAssertEqual(Router.Execution.worker.place(bodyBytes: small, storageIsLocal: local), .worker)
            XCTAssertEqual(Router.Execution.short.place(bodyBytes: large, storageIsLocal: local), .worker)
            XCTAssertEqual(Router.Execution.queuedWrite.place(bodyBytes: large, storageIsLocal: local), .worker)
            XCTAssertEqual(Router.Execution.keptRead.place(bodyBytes: large, storageIsLocal: local), .worker)
        }
        XCTAssertEqual(Router.Execution.short.place(bodyBytes: small, storageIsLocal: true), .loop)
        XCTAssertEqual(Router.Execution.short.place(bodyBytes: small, storageIsLocal: false), .worker)
        XCTAssertEqual(Router.Execution.queuedWrite.place(bodyBytes: small, storageIsLocal: true), .loop)
        // Over PostgreSQL a queued write runs on the loop only once its caller is known.
        XCTAssertEqual(Router.Execution.queuedWrite.place(bodyBytes: small, storageIsLocal: false), .loopIfCallerKnown)
        // So does a kept read: it waits for its stamp off the loop.
        XCTAssertEqual(Router.Execution.keptRead.place(bodyBytes: small, storageIsLocal: true), .loop)
        XCTAssertEqual(Router.Execution.keptRead.place(bodyBytes: small, storageIsLocal: false), .loopIfCallerKnown)
    }
}
