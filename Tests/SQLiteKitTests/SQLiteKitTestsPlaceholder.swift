import XCTest
final class SQLiteKitTestsPlaceholder: XCTestCase { func testBuilds() {} }
