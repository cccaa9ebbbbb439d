import HTTPServer
import LedgerModel
@testable import LedgerServer
import LedgerServerTesting
import XCTest

/// One problem body for the HTTP layer's own refusals and the application's errors.
final class ProblemBodyTests: XCTestCase {
    /// An application error and a refusal of the HTTP layer with the same status, code and
    /// detail are the same bytes, and the title is the status line's reason phrase.
    func testApplicationAndHTTPLayerProblemsAreOneFormat() throws {
        let titles = [400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
                      408: "Request Timeout", 409: "Conflict", 410: "Gone", 412: "Precondition Failed", 413: "Content Too Large",
                      415: "Unsupported Media Type", 422: "Unprocessable Content", 429: "Too Many Requests",
                      431: "Request Header Fields Too Large", 500: "Internal Server Error", 503: "Service Unavailable",
                      507: "Insufficient Storage"]
        for (status, title) in titles {
            let app = APIError(status, "some_code", "A \"quoted\"\tdetail.").response
            let http = ProblemResponse.make(status: status, code: "some_code", detail: "A \"quoted\"\tdetail.",
                                            typePrefix: Problem.typePrefix)
            XCTAssertEqual(app.body, http.body, "\(status)")
            XCTAssertEqual(app.headers["Content-Type"], "application/problem+json")
            let json = try JSONValue.parse(app.body)
            XCTAssertEqual(json["title"]?.stringValue, title, "\(status)")
            XCTAssertEqual(json["detail"]?.stringValue, "A \"quoted\"\tdetail.")
        }
    }

    /// Extra members follow the five standard ones; `fields` is sorted by name.
    func testMembersAndHeaders() throws {
        var e = APIError.validation(["b": "is bad", "a": "is worse"])
        e.extra["retryAfter"] = .int(3)
        e.headers.set("Retry-After", "3")
        let r = e.response
        XCTAssertEqual(r.headers["Retry-After"], "3")
        XCTAssertEqual(String(decoding: r.body, as: UTF8.self), #"{"type":"urn:kidledger:validation_failed","title":"Unprocessable Content","status":422,"detail":"The request has invalid fields: a, b.","code":"validation_failed","fields":{"a":"is worse","b":"is bad"},"retryAfter":3}"#)
    }

    /// The server built by `LedgerApp` types the HTTP layer's own refusals as the API's
    /// problems, and names itself.
    func testHTTPLayerProblemsHaveTheAPIsTypes() throws {
        let server = try TestServer(.live)
        defer { server.stop() }
        let r = server.call("POST", "/v1/accounts", rawBody: Data("{}".utf8),
                            headers: ["Content-Type": "application/json", "Content-Encoding": "br"])
        XCTAssertEqual(r.status, 415)
        XCTAssertEqual(r.header("Server"), "kidledger")
        XCTAssertEqual(String(decoding: r.body, as: UTF8.self), #"{"type":"urn:kidledger:unsupported_media_type","title":"Unsupported Media Type","status":415,"detail":"Content-Encoding br is not supported; send gzip or identity.","code":"unsupported_media_type"}"#)
    }
}
