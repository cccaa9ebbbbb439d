import XCTest
final class LedgerClientTestsPlaceholder: XCTestCase { func testBuilds() {} }
