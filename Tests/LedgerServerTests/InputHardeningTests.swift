import Foundation
import LedgerModel
@testable import LedgerServer
import LedgerServerTesting
import XCTest

/// Names and currencies over HTTP: what the validation rules refuse is refused on every
/// path that takes them (create, rename, sync push).
final class InputHardeningTests: XCTestCase {
    var s: TestServer!
    override func setUpWithError() throws { s = try TestServer() }
    override func tearDown() { s.stop() }

    /// Every member not allowed is named in the errors; objects of any size keep their
    /// members in order.
    func testUnknownMembersAreEachNamed() throws {
        var b = try JSONBody.parse(Array(#"{"amountCents":1,"extra":2,"note":"n","Note":3,"zz":{"a":1}}"#.utf8))
        b.allowOnly(["amountCents", "note"])
        XCTAssertEqual(b.errors, ["extra": "is not a known field", "Note": "is not a known field", "zz": "is not a known field"])
        var wide = try JSONBody.parse(Array(#"{"g":1,"a":2,"f":3,"b":4,"e":5,"c":6,"d":7}"#.utf8))
        wide.allowOnly(["a", "b", "c", "d", "e", "f", "g"])
        XCTAssertEqual(wide.errors, [:])
        XCTAssertEqual(wide.object.keys, ["g", "a", "f", "b", "e", "c", "d"])
        var one = try JSONBody.parse(Array(#"{"x":[{"y":{}}]}"#.utf8))
        one.allowOnly([])
        XCTAssertEqual(one.errors, ["x": "is not a known field"])
    }

    func testCurrencyMustBeARealISO4217Code() {
        let (_, t) = s.signup("mum")
        for code in ["ZZZ", "XXX", "XTS", "AAA"] {
            let r = s.call("POST", "/v1/households", token: t, json: .obj(["name": "Home", "currency": .string(code)]))
            XCTAssertEqual(r.status, 422, code); XCTAssertEqual(r.code, "validation_failed", code)
            XCTAssertNotNil(r.json["fields"]?["currency"], code)
            let put = s.call("PUT", "/v1/households/\(UUID().lowercased)", token: t, json: .obj(["name": "Home", "currency": .string(code)]))
            XCTAssertEqual(put.status, 422, code)
        }
        let h = s.call("POST", "/v1/households", token: t, json: .obj(["name": "Home", "currency": "CHF"]))
        XCTAssertEqual(h.status, 201)
        let id = h.json["id"]!.stringValue!
        let patch = s.call("PATCH", "/v1/households/\(id)", token: t, json: .obj(["currency": "ZZZ"]))
        XCTAssertEqual(patch.status, 422); XCTAssertNotNil(patch.json["fields"]?["currency"])
        XCTAssertEqual(s.call("GET", "/v1/households/\(id)", token: t).json["currency"]?.stringValue, "CHF")
    }

    func testInvisibleAndBidiOverrideNamesAreRefusedEverywhere() {
        let (_, t) = s.signup("mum")
        let h = s.household(t)
        let child = s.child(t, household: h)
        for bad in ["\u{200B}\u{200B}", "\u{2060}", " \u{FEFF} ", "\u{3164}", "Ada\u{202E}gpj.exe", "\u{2066}Ada\u{2069}"] {
            let label = bad.unicodeScalars.map { String($0.value, radix: 16) }.joined(separator: " ")
            let account = s.call("POST", "/v1/accounts", json: .obj(["handle": .string("x\(abs(label.hashValue) % 100000)"), "displayName": .string(bad)]))
            XCTAssertEqual(account.status, 422, label); XCTAssertNotNil(account.json["fields"]?["displayName"], label)
            XCTAssertEqual(s.call("POST", "/v1/households", token: t, json: .obj(["name": .string(bad)])).status, 422, label)
            XCTAssertEqual(s.call("PATCH", "/v1/households/\(h)", token: t, json: .obj(["name": .string(bad)])).status, 422, label)
            XCTAssertEqual(s.call("POST", "/v1/households/\(h)/children", token: t, json: .obj(["name": .string(bad)])).status, 422, label)
            XCTAssertEqual(s.call("PATCH", "/v1/households/\(h)/children/\(child)", token: t, json: .obj(["name": .string(bad)])).status, 422, label)
            XCTAssertEqual(s.call("POST", "/v1/tokens", token: t, json: .obj(["deviceName": .string(bad)])).status, 422, label)
            let now = Timestamp.format(ms: Timestamp.nowMs())
            let push = s.call("POST", "/v1/households/\(h)/changes", token: t, json: .obj(["children": .array([.obj([
                "id": .string(UUID().lowercased), "name": .string(bad), "sortOrder": 1, "archived": false,
                "createdAt": .string(now), "modifiedAt": .string(now), "modifiedBy": .string(UUID().lowercased),
            ])])]))
            XCTAssertEqual(push.status, 200, label)
            XCTAssertEqual(push.json["results"]?.arrayValue?.first?["status"]?.stringValue, "rejected", label)
            XCTAssertNotNil(push.json["results"]?.arrayValue?.first?["fields"]?["name"], label)
        }
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/children/\(child)", token: t).json["name"]?.stringValue, "Ada")
    }
}
