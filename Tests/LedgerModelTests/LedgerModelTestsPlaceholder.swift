import XCTest
final class LedgerModelTestsPlaceholder: XCTestCase { func testBuilds() {} }
