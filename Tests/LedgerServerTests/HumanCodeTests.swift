import Foundation
@testable import LedgerCore
@testable import LedgerServer
@testable import LedgerStorageSQLite
import XCTest

final class HumanCodeTests: XCTestCase {
    func testGeneratedCodesUseTheAlphabetInGroupsOfFour() {
        let code = HumanCode.generate(length: 16)
        XCTAssertEqual(code.canonical.count, 16)
        XCTAssertTrue(code.canonical.utf8.allSatisfy { HumanCode.alphabet.contains($0) })
        let groups = code.display.split(separator: "-")
        XCTAssertEqual(groups.count, 4)
        XCTAssertTrue(groups.allSatisfy { $0.count == 4 })
        XCTAssertEqual(HumanCode.generate(length: 12).display.count, 14)
    }

    /// 32 symbols, 5 bits each: 12 characters carry 60 bits, 16 carry 80. Every symbol turns
    /// up about equally often (a skewed generator would carry fewer bits).
    func testSymbolsAreUniform() {
        var counts = [Int](repeating: 0, count: 32)
        let n = 4_000
        for _ in 0..<n {
            for c in HumanCode.generate(length: 16).canonical.utf8 { counts[HumanCode.alphabet.firstIndex(of: c)!] += 1 }
        }
        let expected = Double(n * 16) / 32
        let chiSquare = counts.reduce(0.0) { $0 + pow(Double($1) - expected, 2) / expected }
        // 31 degrees of freedom: above 61.1 happens by chance once in a thousand runs.
        XCTAssertLessThan(chiSquare, 61.1, "\(counts)")
        XCTAssertEqual(Set((0..<1000).map { _ in HumanCode.generate(length: 12).canonical }).count, 1000)
    }

    func testReadingIgnoresCaseHyphensAndSpacesAndTakesLookAlikes() {
        let code = HumanCode(reading: "7KQ2-M9XD-4TRB", length: 12)
        XCTAssertEqual(code?.canonical, "7KQ2M9XD4TRB")
        XCTAssertEqual(HumanCode(reading: "7kq2 m9xd 4trb", length: 12), code)
        XCTAssertEqual(HumanCode(reading: " 7kq2m9xd-4trb ", length: 12), code)
        XCTAssertEqual(HumanCode(reading: "OIL0-0000-0000", length: 12)?.canonical, "011000000000")
        XCTAssertEqual(HumanCode(reading: "oil0-0000-0000", length: 12)?.canonical, "011000000000")
        for bad in ["7KQ2-M9XD-4TR", "7KQ2-M9XD-4TRBX", "7KQ2-M9XD-4TRU", "7KQ2_M9XD_4TRB", "", "é7KQ2M9XD4TR"] {
            XCTAssertNil(HumanCode(reading: bad, length: 12), bad)
        }
        XCTAssertEqual(code?.hash, HumanCode(reading: "7kq2m9xd4trb", length: 12)?.hash)
        XCTAssertEqual(code?.hash.count, 32)
        XCTAssertEqual(code?.prefix(2), "7K")
    }
}
