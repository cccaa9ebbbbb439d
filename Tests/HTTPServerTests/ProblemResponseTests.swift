import LedgerModel
import XCTest
@testable import HTTPServer

final class ProblemResponseTests: XCTestCase {
    /// Every member is escaped as JSON, the code included.
    func testEveryMemberIsValidJSON() throws {
        let r = ProblemResponse.make(status: 400, code: "odd\"code\\", detail: "line\nbreak \u{1} \u{2028} \"q\"")
        let json = try JSONValue.parse(r.body)
        XCTAssertEqual(json["code"]?.stringValue, "odd\"code\\")
        XCTAssertEqual(json["type"]?.stringValue, "urn:kidledger:odd\"code\\")
        XCTAssertEqual(json["detail"]?.stringValue, "line\nbreak \u{1} \u{2028} \"q\"")
        XCTAssertEqual(json["title"]?.stringValue, "Bad Request")
        XCTAssertEqual(json["status"]?.intValue, 400)
    }
}
