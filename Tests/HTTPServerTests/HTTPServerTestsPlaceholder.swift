import XCTest
final class HTTPServerTestsPlaceholder: XCTestCase { func testBuilds() {} }
