import Foundation
@testable import LedgerServer
import LedgerServerTesting
import XCTest

/// `GET /openapi.yaml` answers as the document says: `application/yaml`, or `text/plain` to a
/// client whose `Accept` asks for text and not YAML.
final class OpenAPIDocumentTests: XCTestCase {
    func testContentTypeFollowsAccept() throws {
        let s = try TestServer()
        defer { s.stop() }
        let spec = try String(contentsOf: URL(fileURLWithPath: s.app.configuration.openAPIPath), encoding: .utf8)
        for (accept, type) in [(nil, "application/yaml"), ("*/*", "application/yaml"),
                               ("text/plain", "text/plain"), ("text/*;q=0.5", "text/plain"),
                               ("text/plain;q=0", "application/yaml"),
                               ("application/yaml, text/plain", "application/yaml"),
                               ("text/html,application/xhtml+xml,*/*;q=0.8", "application/yaml")] as [(String?, String)] {
            let r = s.call("GET", "/openapi.yaml", headers: accept.map { ["Accept": $0] } ?? [:])
            XCTAssertEqual(r.status, 200)
            XCTAssertEqual(r.header("Content-Type"), type + "; charset=utf-8", "Accept: \(accept ?? "none")")
            XCTAssertTrue(r.header("Vary")?.split(separator: ",").contains { $0.trimmingCharacters(in: .whitespaces) == "Accept" } == true)
            XCTAssertEqual(String(decoding: r.body, as: UTF8.self), spec)
        }
    }

    /// The 200 answer lists both types, YAML's first.
    func testDocumentListsBothTypes() throws {
        let lines = OpenAPIRulesTests.spec.split(separator: "\n").map(String.init)
        guard let op = lines.firstIndex(of: "  /openapi.yaml:") else { return XCTFail("no /openapi.yaml path") }
        let types = lines[op...].prefix { $0 != "components:" }.filter { $0.hasSuffix(":") && ($0.contains("application/") || $0.contains("text/")) }
            .map { $0.trimmingCharacters(in: .whitespaces).dropLast() }
        XCTAssertEqual(types.prefix(2), ["application/yaml", "text/plain"])
    }
}
