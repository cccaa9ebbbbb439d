import XCTest
final class StoreKitJWSTestsPlaceholder: XCTestCase { func testBuilds() {} }
