import XCTest
final class LedgerServerTestsPlaceholder: XCTestCase { func testBuilds() {} }
