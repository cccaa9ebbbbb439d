import Foundation
@testable import LedgerClient
import XCTest

final class FeedPageDecoderTests: XCTestCase {
    private func decode(_ text: String) throws -> Wire.ChangesPage {
        try FeedPageDecoder.decode(Array(text.utf8))
    }

    func testDecodesWhatJSONDecoderDecodes() throws {
        let page = Wire.ChangesPage(
            household: Wire.Household(id: "h1", name: "Smiths \"Family\"", currency: "EUR", ownerAccountId: "a1", role: "owner",
                                      permission: "readWrite", shared: true),
            children: [Wire.Child(id: "C1", householdId: "h1", name: "Zoë\n", sortOrder: 2, archived: true, createdAt: "2026-01-01T00:00:00.000Z",
                                  modifiedAt: "2026-01-02T00:00:00.000Z", modifiedBy: "a1", changeTag: "t1", balanceCents: -5)],
            transactions: [
                Wire.Transaction(id: "x1", householdId: "h1", childId: "C1", amountCents: -9_223_372_036_854_775_807, note: "tab\there \\ \u{1F600}",
                                 source: "siri", createdAt: "2026-01-01T00:00:00.000Z", recordedAt: nil, authorAccountId: "a1",
                                 reversesId: nil, reversedById: "x2"),
                Wire.Transaction(id: "x2", childId: "C1", amountCents: 7, createdAt: "2026-01-01T00:00:01.000Z", reversesId: "x1"),
            ],
            access: Wire.Access(role: "owner", permission: "readWrite"), nextToken: "tok/1+2", moreComing: true)
        let encoded = try JSONEncoder().encode(page)
        let fast = try FeedPageDecoder.decode(Array(encoded))
        let slow = try JSONDecoder().decode(Wire.ChangesPage.self, from: encoded)
        XCTAssertEqual(fast.children, slow.children)
        XCTAssertEqual(fast.transactions, slow.transactions)
        XCTAssertEqual(fast.household, slow.household)
        XCTAssertEqual(fast.access, slow.access)
        XCTAssertEqual(fast.nextToken, "tok/1+2")
        XCTAssertTrue(fast.moreComing)
        XCTAssertTrue(fast.unreadable.isEmpty)
    }

    func testEscapesUnknownFieldsAndNulls() throws {
        let page = try decode("""
            { "future": {"a": [1, 2.5e3, {"b": null}], "c": "\\u00e9"}, "household": null,
              "transactions": [ {"id": "t1", "childId": "c1", "amountCents": 5, "createdAt": "2026-01-01T00:00:00Z",
                                 "note": "caf\\u00e9 \\"x\\" \\ud83d\\ude00", "recordedAt": null, "extra": [true, false]} ],
              "children": [], "nextToken": null, "moreComing": false }
            """)
        XCTAssertEqual(page.transactions.count, 1)
        XCTAssertEqual(page.transactions[0].note, "café \"x\" 😀")
        XCTAssertNil(page.transactions[0].recordedAt)
        XCTAssertNil(page.household)
        XCTAssertNil(page.nextToken)
        XCTAssertFalse(page.moreComing)
    }

    func testARecordOfTheWrongShapeIsSetAsideNotTheWholePage() throws {
        let page = try decode("""
            {"children": [{"id": "C9", "name": 12, "archived": false, "createdAt": "x", "modifiedAt": "x", "modifiedBy": "a"}],
             "transactions": [
                {"id": "t1", "childId": "c1", "amountCents": "5", "createdAt": "2026-01-01T00:00:00Z"},
                {"id": "t2", "childId": "c1", "amountCents": 6, "createdAt": "2026-01-01T00:00:00Z"},
                {"id": "t3", "childId": "c1", "amountCents": 1.5, "createdAt": "2026-01-01T00:00:00Z"},
                {"childId": "c1", "amountCents": 1, "createdAt": "2026-01-01T00:00:00Z"}],
             "nextToken": "n", "moreComing": false}
            """)
        XCTAssertEqual(page.transactions.map(\.id), ["t2"])
        XCTAssertEqual(page.unreadable.map(\.kind), ["child", "transaction", "transaction", "transaction"])
        XCTAssertEqual(page.unreadable.map(\.id), ["c9", "t1", "t3", ""])
        XCTAssertTrue(page.unreadable[1].json.contains(#""amountCents": "5""#))
    }

    func testAPageThatIsNotTheFeedIsAnError() {
        for text in ["", "[]", "{\"children\": [", "{\"moreComing\": true} x", "{\"children\": []}", "{\"moreComing\": 1}",
                     "{\"transactions\": [{\"id\": \"t\" \"x\": 1}], \"moreComing\": false}", "{\"a\": \"\u{1}\", \"moreComing\": true}"] {
            XCTAssertThrowsError(try decode(text), text) { error in
                guard case .invalidAnswer = error as? APIError else { return XCTFail("\(error)") }
            }
        }
    }
}
