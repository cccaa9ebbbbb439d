import Foundation
import LedgerModel
@testable import LedgerCore
@testable import LedgerServer
import XCTest

/// The field rules of openapi.yaml are the server's: written from the same lists.
final class OpenAPIRulesTests: XCTestCase {
    static let spec: String = {
        let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return (try? String(contentsOf: repo.appendingPathComponent("openapi.yaml"), encoding: .utf8)) ?? ""
    }()

    /// The lines of one schema under `components: schemas:`.
    static func schema(_ name: String) -> String {
        let lines = spec.split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(of: "    \(name):") else { return "" }
        let end = lines[(start + 1)...].firstIndex { $0.hasPrefix("    ") && !$0.hasPrefix("     ") } ?? lines.endIndex
        return lines[start..<end].joined(separator: "\n")
    }

    func testCurrencyEnumIsTheShippedList() {
        let text = Self.schema("Currency")
        guard let open = text.range(of: "enum: ["), let close = text.range(of: "]", range: open.upperBound..<text.endIndex) else {
            return XCTFail("Currency has no enum")
        }
        let listed = text[open.upperBound..<close.lowerBound].split { $0 == "," || $0 == " " || $0 == "\n" }.map(String.init)
        XCTAssertEqual(listed, CurrencyCodes.active.sorted())
    }

    func testNamePatternHasTheInvisibleAndBidiRanges() {
        func esc(_ v: UInt32) -> String {
            let hex = String(v, radix: 16, uppercase: true)
            return v <= 0xFFFF ? "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                : "\\U" + String(repeating: "0", count: 8 - hex.count) + hex
        }
        let invisible = Validation.invisibleRanges.map { $0.lowerBound == $0.upperBound ? esc($0.lowerBound) : esc($0.lowerBound) + "-" + esc($0.upperBound) }.joined()
        let space = #"\t\n\u000B\f\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000"#
        let controlOrSpace = #"\u0000-\u0020\u007F-\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000"#
        let control = #"\u0000-\u001F\u007F-\u009F\u2028\u2029"#
        let bidi = #"\u202A-\u202E\u2066-\u2069"#
        let pattern = "^[\(space)]*[^\(controlOrSpace)\(invisible)](?:[^\(control)\(bidi)]{0,98}[^\(controlOrSpace)\(bidi)])?[\(space)]*$"
        XCTAssertTrue(Self.schema("Name").contains("      pattern: '\(pattern)'"), "expected pattern: \(pattern)")
    }

    /// The quota and rate-limit codes are in the spec's problem and push-result enums.
    func testQuotaCodesAreInTheSpec() {
        for (schema, codes) in [("Problem409Code", ["too_many_households", "too_many_children", "too_many_invitations", "too_many_tokens", "too_many_pots"]),
                                ("Problem429Code", ["registration_rate_limited"]), ("PushResult", ["too_many_children", "too_many_pots"])] {
            let text = Self.schema(schema)
            for code in codes { XCTAssertTrue(text.contains(code), "\(schema) lacks \(code)") }
        }
        XCTAssertTrue(Self.schema("Problem409").contains("        limit:"))
        XCTAssertTrue(Self.schema("Problem409").contains("        scope:"))
        for scope in [InvitationQuota.inviter, .invitee, .inviterForInvitee] {
            XCTAssertTrue(Self.schema("Problem409").contains(scope.rawValue), "Problem409.scope lacks \(scope.rawValue)")
        }
    }
}
