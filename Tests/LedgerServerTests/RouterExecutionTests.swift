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
        ])
        let queued = Set(declared.filter { $0.value == .queuedWrite }.keys)
        XCTAssertEqual(queued, [
            "POST /v1/households/{id}/children", "PATCH /v1/households/{id}/children/{childId}",
            "POST /v1/households/{id}/children/{childId}/transactions",
            "POST /v1/households/{id}/transactions/{txId}/reversal",
            "POST /v1/households/{id}/children/{childId}/undo-last",
        ])
        XCTAssertEqual(declared["GET /v1/households/{id}/children"], .short)
    }

    func testWhereEachKindRuns() {
        let small = 100, large = Router.Execution.loopBodyLimit + 1
        for local in [true, false] {
            XCTAssertTrue(Router.Execution.inline.runsOnLoop(bodyBytes: large, storageIsLocal: local) { false })
            XCTAssertFalse(Router.Execution.worker.runsOnLoop(bodyBytes: small, storageIsLocal: local) { true })
        }
        XCTAssertTrue(Router.Execution.short.runsOnLoop(bodyBytes: small, storageIsLocal: true) { false })
        XCTAssertFalse(Router.Execution.short.runsOnLoop(bodyBytes: large, storageIsLocal: true) { true })
        XCTAssertFalse(Router.Execution.short.runsOnLoop(bodyBytes: small, storageIsLocal: false) { true })
        XCTAssertTrue(Router.Execution.queuedWrite.runsOnLoop(bodyBytes: small, storageIsLocal: true) { false })
        XCTAssertTrue(Router.Execution.queuedWrite.runsOnLoop(bodyBytes: small, storageIsLocal: false) { true })
        XCTAssertFalse(Router.Execution.queuedWrite.runsOnLoop(bodyBytes: small, storageIsLocal: false) { false })
        XCTAssertFalse(Router.Execution.queuedWrite.runsOnLoop(bodyBytes: large, storageIsLocal: false) { true })
        // The caller is looked up only for a queued write over remote storage.
        var asked = 0
        _ = Router.Execution.queuedWrite.runsOnLoop(bodyBytes: small, storageIsLocal: true) { asked += 1; return true }
        _ = Router.Execution.short.runsOnLoop(bodyBytes: small, storageIsLocal: false) { asked += 1; return true }
        XCTAssertEqual(asked, 0)
    }
}
