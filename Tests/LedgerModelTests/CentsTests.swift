import XCTest
@testable import LedgerModel

final class CentsTests: XCTestCase {
    func testOverflowIsDetected() {
        XCTAssertNil(Cents.add(Int64.max, 1))
        XCTAssertNil(Cents.add(Int64.min, -1))
        XCTAssertEqual(Cents.add(5, -7), -2)
    }

    func testParseDecimalWithoutFloats() {
        XCTAssertEqual(Cents.parse("5"), 500)
        XCTAssertEqual(Cents.parse("5.25"), 525)
        XCTAssertEqual(Cents.parse("0.5"), 50)
        XCTAssertEqual(Cents.parse("0.07"), 7)
        XCTAssertNil(Cents.parse("5.255"))
        XCTAssertNil(Cents.parse("1e3"))
        XCTAssertNil(Cents.parse("-5"))
        XCTAssertNil(Cents.parse(""))
        XCTAssertNil(Cents.parse(".5"))
        XCTAssertNil(Cents.parse("5."))
        XCTAssertNil(Cents.parse("99999999999999999999"))
    }

    func testFormat() {
        XCTAssertEqual(Cents.format(-525), "-5.25")
        XCTAssertEqual(Cents.format(7), "0.07")
        XCTAssertEqual(Cents.format(Int64.min), "-92233720368547758.08")
    }

    func testAmountBounds() {
        XCTAssertNoThrow(try Validation.amount(100_000_000_000).get())
        XCTAssertNoThrow(try Validation.amount(-100_000_000_000).get())
        XCTAssertThrowsError(try Validation.amount(100_000_000_001).get())
        XCTAssertThrowsError(try Validation.amount(0).get())
        XCTAssertThrowsError(try Validation.amount(Int64.min).get())
    }
}
