import Foundation
@testable import LedgerCore
@testable import LedgerServer
@testable import LedgerStorageSQLite
import XCTest

/// The refusals of link codes, recovery, owner transfer and deletion are in the spec's
/// problem enums, with the status the server answers them with.
final class AccountAccessOpenAPITests: XCTestCase {
    func testEveryRefusalCodeIsInItsStatusEnum() {
        let refusals: [APIError] = [LinkCodeRoutes.invalid, RecoveryCodeRoutes.failed, LinkCodeRoutes.limited(1),
                                    RecoveryCodeRoutes.limited(1), AccountAccessError.notAParticipant.apiError,
                                    AccountAccessError.confirmationMismatch.apiError,
                                    AccountAccessError.ownerOfSharedHousehold([]).apiError]
        for e in refusals {
            let schema = OpenAPIRulesTests.schema("Problem\(e.status)Code")
            XCTAssertTrue(schema.contains(e.code), "Problem\(e.status)Code lacks \(e.code)")
        }
        XCTAssertTrue(OpenAPIRulesTests.schema("Problem409").contains("        households:"))
        XCTAssertNotNil(RecoveryCodeRoutes.failed.headers["WWW-Authenticate"])
    }
}
