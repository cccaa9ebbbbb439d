import Foundation
import XCTest
@testable import HTTPServer

final class ProblemResponseTests: XCTestCase {
    /// The members in their order, `type` being the prefix and the code.
    func testBytes() {
        var headers = HTTPHeaders()
        headers.set("Retry-After", "1")
        let r = ProblemResponse.make(status: 503, code: "service_unavailable", detail: "Too many connections.",
                                     typePrefix: "urn:kidledger:", headers: headers)
        XCTAssertEqual(String(decoding: r.body, as: UTF8.self), #"{"type":"urn:kidledger:service_unavailable","title":"Service Unavailable","status":503,"detail":"Too many connections.","code":"service_unavailable"}"#)
        XCTAssertEqual(r.headers["Content-Type"], "application/problem+json")
        XCTAssertEqual(r.headers["Retry-After"], "1")
        XCTAssertEqual(HTTPServerConfiguration().problemTypePrefix, "urn:problem:")
        XCTAssertEqual(ProblemResponse.requestTimeout(typePrefix: "urn:problem:").body,
                       Array(#"{"type":"urn:problem:request_timeout","title":"Request Timeout","status":408,"detail":"The request was not received in time.","code":"request_timeout"}"#.utf8))
    }

    /// Every member is escaped as JSON, the code and the prefix included; other UTF-8 is kept.
    func testEveryMemberIsValidJSON() throws {
        let r = ProblemResponse.make(status: 400, code: "odd\"code\\", detail: "line\nbreak \u{1} \u{2028} \"q\" é",
                                     typePrefix: "urn:x\t:")
        XCTAssertEqual(String(decoding: r.body, as: UTF8.self),
                       #"{"type":"urn:x\t:odd\"code\\","title":"Bad Request","status":400,"detail":"line\nbreak \u0001 "#
                       + "\u{2028}" + #" \"q\" é","code":"odd\"code\\"}"#)
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(r.body)) as? [String: Any])
        XCTAssertEqual(json["code"] as? String, "odd\"code\\")
        XCTAssertEqual(json["type"] as? String, "urn:x\t:odd\"code\\")
        XCTAssertEqual(json["detail"] as? String, "line\nbreak \u{1} \u{2028} \"q\" é")
        XCTAssertEqual(json["title"] as? String, "Bad Request")
        XCTAssertEqual(json["status"] as? Int, 400)
    }

    /// A status without a reason phrase here, and one past the usual range, still make JSON.
    func testUnknownStatus() throws {
        let r = ProblemResponse.make(status: -1_000_000, code: "c", detail: "", typePrefix: "")
        XCTAssertEqual(String(decoding: r.body, as: UTF8.self),
                       #"{"type":"c","title":"Status -1000000","status":-1000000,"detail":"","code":"c"}"#)
    }
}
