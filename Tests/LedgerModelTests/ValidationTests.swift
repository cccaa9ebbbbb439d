import XCTest
@testable import LedgerModel

final class ValidationTests: XCTestCase {
    func testNamesAreTrimmedAndBounded() throws {
        XCTAssertEqual(try Validation.name("  Ada \n").get(), "Ada")
        XCTAssertThrowsError(try Validation.name("   ").get())
        XCTAssertNoThrow(try Validation.name(String(repeating: "é", count: 100)).get())
        XCTAssertThrowsError(try Validation.name(String(repeating: "a", count: 101)).get())
        XCTAssertThrowsError(try Validation.name("a\u{0}b").get())
        XCTAssertThrowsError(try Validation.name("a\u{7}b").get())
    }

    func testNotes() {
        XCTAssertNoThrow(try Validation.note("").get())
        XCTAssertNoThrow(try Validation.note(String(repeating: "x", count: 500)).get())
        XCTAssertThrowsError(try Validation.note(String(repeating: "x", count: 501)).get())
    }

    func testHandlesAndCurrency() {
        XCTAssertNoThrow(try Validation.handle("mum_1-x").get())
        XCTAssertThrowsError(try Validation.handle("ab").get())
        XCTAssertThrowsError(try Validation.handle("Mum").get())
        XCTAssertThrowsError(try Validation.handle(String(repeating: "a", count: 33)).get())
        XCTAssertNoThrow(try Validation.currency("EUR").get())
        XCTAssertThrowsError(try Validation.currency("eur").get())
    }

    func testLWW() {
        XCTAssertTrue(LWW.wins((2, "a"), over: (1, "z")))
        XCTAssertTrue(LWW.wins((1, "b"), over: (1, "a")))
        XCTAssertFalse(LWW.wins((1, "a"), over: (1, "a")))
        XCTAssertEqual(LWW.stamp(now: 10, newestSeen: 20), 21)
        XCTAssertEqual(LWW.stamp(now: 30, newestSeen: 20), 30)
    }
}
