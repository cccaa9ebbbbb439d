@testable import LedgerClient
import XCTest

final class AmountParserTests: XCTestCase {
    func testAcceptsDecimalText() throws {
        XCTAssertEqual(try AmountParser.cents(from: "5"), 500)
        XCTAssertEqual(try AmountParser.cents(from: "5.25"), 525)
        XCTAssertEqual(try AmountParser.cents(from: "0.5"), 50)
        XCTAssertEqual(try AmountParser.cents(from: "1000000000"), 100_000_000_000)
    }

    func testRefusesEverythingElse() {
        for text in ["", "5.255", "1e3", "-5", "+5", "5.", ".", "abc", "5,25", " 5", "0", "0.00", "1000000000.01",
                     "99999999999999999999"] {
            XCTAssertThrowsError(try AmountParser.cents(from: text), text)
        }
        do { _ = try AmountParser.cents(from: "5.255"); XCTFail() } catch { XCTAssertEqual(error, .tooManyDecimals("5.255")) }
    }
}

