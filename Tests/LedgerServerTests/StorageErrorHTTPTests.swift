import HTTPServer
@testable import LedgerCore
@testable import LedgerServer
import XCTest

/// Storage's busy, full and shutting-down refusals are given their status at the HTTP edge, from the
/// domain errors, and answered byte for byte as when the edge read SQLite's result codes.
final class StorageErrorHTTPTests: XCTestCase {
    func testOutOfSpaceIs507AndBusyAndShuttingDownAre503WithRetryAfter() {
        let cases: [(LedgerStorageError, status: Int, retryAfter: String, body: String)] = [
            (.outOfSpace, 507, "10", """
                {"type":"urn:kidledger:insufficient_storage","title":"Insufficient Storage","status":507,\
                "detail":"The server's disk is full; nothing was stored. Retry later.","code":"insufficient_storage"}
                """),
            (.busy, 503, "1", """
                {"type":"urn:kidledger:service_unavailable","title":"Service Unavailable","status":503,\
                "detail":"The database is busy; retry shortly.","code":"service_unavailable"}
                """),
            (.shuttingDown, 503, "1", """
                {"type":"urn:kidledger:service_unavailable","title":"Service Unavailable","status":503,\
                "detail":"The server is shutting down.","code":"service_unavailable"}
                """),
        ]
        for (error, status, retryAfter, body) in cases {
            let r = Services.problem(for: error, logger: Logger(level: .none))
            XCTAssertEqual(r.status, status, "\(error)")
            XCTAssertEqual(r.headers["Content-Type"], "application/problem+json", "\(error)")
            XCTAssertEqual(r.headers["Retry-After"], retryAfter, "\(error)")
            XCTAssertEqual(String(decoding: r.body, as: UTF8.self), body, "\(error)")
        }
    }
}
