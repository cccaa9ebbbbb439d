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

    /// Names that display as nothing, or as other text than they hold, are refused.
    func testNamesBeginVisiblyAndHaveNoBidiOverrides() {
        for invisible in ["\u{200B}", "\u{200B}\u{200C}\u{200D}", "\u{FEFF}", "\u{2060}", " \u{200B} \u{00AD} ",
                          "\u{3164}", "\u{115F}\u{1160}", "\u{FFA0}", "\u{2800}", "\u{034F}", "\u{FE0F}",
                          "\u{E0041}", "\u{3000}\u{200B}", "\u{180E}", "\u{200B}Ada", "\u{2060}\u{2060}Ada"] {
            XCTAssertThrowsError(try Validation.name(invisible).get(), invisible.unicodeScalars.map { String($0.value, radix: 16) }.joined(separator: " "))
        }
        for scalar in Array(0x202A...0x202E) + Array(0x2066...0x2069) {
            let name = "Ada" + String(Unicode.Scalar(UInt32(scalar))!) + "txt.exe"
            XCTAssertThrowsError(try Validation.name(name).get(), String(scalar, radix: 16))
        }
        // Visible names with format characters inside or at the end stay accepted: joiners in
        // emoji and scripts, variation selectors, tag sequences, direction marks.
        for ok in ["👨\u{200D}👩\u{200D}👧", "क्\u{200D}ष", "Ada\u{200E}", "עדה", "e\u{0301}", "Zoë", "❤\u{FE0F}",
                   "🏴\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F}", "Ada\u{200B}"] {
            XCTAssertNoThrow(try Validation.name(ok).get(), ok)
        }
    }

    /// Every scalar of the written-out invisible ranges is a format character or a
    /// default-ignorable code point in the toolchain's Unicode tables (U+2800 aside).
    func testInvisibleRangesAreFormatOrDefaultIgnorable() {
        for range in Validation.invisibleRanges {
            for v in range {
                guard let s = Unicode.Scalar(v), v != 0x2800 else { continue }
                XCTAssertTrue(s.properties.generalCategory == .format || s.properties.isDefaultIgnorableCodePoint, String(v, radix: 16))
            }
        }
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

    /// Only codes of currencies in circulation: not any three capital letters.
    func testCurrencyIsARealISO4217Code() {
        for code in ["USD", "EUR", "JPY", "GBP", "CHF", "XAF", "XOF", "XCD", "XPF", "XCG", "ZWG", "SLE", "VES"] {
            XCTAssertNoThrow(try Validation.currency(code).get(), code)
        }
        for code in ["ZZZ", "AAA", "XXX", "XTS", "XAU", "XDR", "HRK", "DEM", "ANG", "ZWL", "usd", "US", "USDD", "", "U\u{0053}D\u{200B}"] {
            XCTAssertThrowsError(try Validation.currency(code).get(), code)
        }
        XCTAssertEqual(CurrencyCodes.active.count, 158)
        XCTAssertTrue(CurrencyCodes.active.allSatisfy { $0.utf8.count == 3 && $0.utf8.allSatisfy { $0 >= 65 && $0 <= 90 } })
    }

    func testLWW() {
        XCTAssertTrue(LWW.wins((2, "a"), over: (1, "z")))
        XCTAssertTrue(LWW.wins((1, "b"), over: (1, "a")))
        XCTAssertFalse(LWW.wins((1, "a"), over: (1, "a")))
        XCTAssertEqual(LWW.stamp(now: 10, newestSeen: 20), 21)
        XCTAssertEqual(LWW.stamp(now: 30, newestSeen: 20), 30)
    }
}
