import Foundation
import XCTest
@testable import LedgerModel

final class CentsSchedulesTests: XCTestCase {
    private let a = UUID(uuidString: "00000000-0000-4000-8000-00000000000a")!
    private let b = UUID(uuidString: "00000000-0000-4000-8000-00000000000b")!
    private let c = UUID(uuidString: "00000000-0000-4000-8000-00000000000c")!

    private func shares(_ amount: Int64, _ percents: [(UUID, Int)]) throws -> [Int64] {
        try Cents.split(amountCents: amount, percents: percents.map { (potId: $0.0, percent: $0.1) }).map(\.amountCents)
    }

    func testSplitsInWholeCentsWithTheRemainderToTheFirstPot() throws {
        XCTAssertEqual(try shares(100, [(a, 33), (b, 33), (c, 34)]), [33, 33, 34])
        XCTAssertEqual(try shares(10, [(a, 33), (b, 33), (c, 34)]), [4, 3, 3])
        XCTAssertEqual(try shares(500, [(a, 50), (b, 50)]), [250, 250])
        XCTAssertEqual(try shares(101, [(a, 50), (b, 50)]), [51, 50])
        XCTAssertEqual(try shares(1, [(a, 10), (b, 90)]), [1, 0])
        XCTAssertEqual(try shares(7, [(a, 1), (b, 99)]), [1, 6])
        XCTAssertEqual(try shares(0, [(a, 60), (b, 40)]), [0, 0])
        XCTAssertEqual(try shares(999, [(a, 100)]), [999])
        XCTAssertEqual(try shares(-101, [(a, 50), (b, 50)]), [-51, -50])
        let split = try Cents.split(amountCents: 1_000, percents: [(potId: b, percent: 25), (potId: a, percent: 75)])
        XCTAssertEqual(split.map(\.potId), [b, a])
        XCTAssertEqual(split.map(\.amountCents), [250, 750])
    }

    func testSplitsExactlyAtTheEdgesOfInt64() throws {
        XCTAssertEqual(try shares(.max, [(a, 50), (b, 50)]), [Int64.max / 2 + 1, Int64.max / 2])
        XCTAssertEqual(try shares(.min, [(a, 50), (b, 50)]), [Int64.min / 2, Int64.min / 2])
        XCTAssertEqual(try shares(.min, [(a, 100)]), [.min])
        XCTAssertEqual(try shares(.max, [(a, 1), (b, 99)]).reduce(0, +), .max)
        var rng = SplitMix64(seed: 100)
        for _ in 0..<2_000 {
            let amount = rng.next(in: .min...(.max))
            var left = 100, percents: [(UUID, Int)] = []
            while left > 0 {
                let p = Int(rng.next(in: 1...Int64(left)))
                percents.append((UUID(), p))
                left -= p
            }
            let s = try shares(amount, percents)
            XCTAssertEqual(s.reduce(0, &+), amount)
            // Each share is its part of the amount rounded toward zero; the first also holds
            // what rounding left, less than a cent per pot.
            let floors = percents.map { p in
                let (high, low) = amount.magnitude.multipliedFullWidth(by: UInt64(p.1))
                return UInt64(100).dividingFullWidth((high, low)).quotient
            }
            for (i, share) in s.enumerated() {
                XCTAssertTrue(share == 0 || (share < 0) == (amount < 0))
                if i > 0 { XCTAssertEqual(share.magnitude, floors[i]) }
            }
            XCTAssertLessThan(s[0].magnitude - floors[0], UInt64(percents.count))
        }
    }

    func testRefusesSplitsThatDoNotAddUp() {
        XCTAssertThrowsError(try shares(100, [])) { XCTAssertEqual($0 as? ScheduleError, .emptySplit) }
        XCTAssertThrowsError(try shares(100, [(a, 50), (b, 49)])) { XCTAssertEqual($0 as? ScheduleError, .splitPercentsDoNotSumTo100(99)) }
        XCTAssertThrowsError(try shares(100, [(a, 60), (b, 60)])) { XCTAssertEqual($0 as? ScheduleError, .splitPercentsDoNotSumTo100(120)) }
        XCTAssertThrowsError(try shares(100, [(a, 100), (b, 0)])) {
            XCTAssertEqual($0 as? ScheduleError, .splitPercentOutOfRange(potId: b, percent: 0))
        }
        XCTAssertThrowsError(try shares(100, [(a, 150), (b, -50)])) {
            XCTAssertEqual($0 as? ScheduleError, .splitPercentOutOfRange(potId: a, percent: 150))
        }
        XCTAssertThrowsError(try shares(100, [(a, 50), (a, 50)])) { XCTAssertEqual($0 as? ScheduleError, .duplicateSplitPot(a)) }
        XCTAssertEqual(ScheduleError.splitPercentsDoNotSumTo100(99).description, "percents must add up to 100, not 99")
    }

    func testInterestRoundsDownToACent() {
        XCTAssertEqual(Cents.interest(balanceCents: 1_234, rateBasisPoints: 100), 12)   // 1 % of 12.34
        XCTAssertEqual(Cents.interest(balanceCents: 99, rateBasisPoints: 100), 0)
        XCTAssertEqual(Cents.interest(balanceCents: 10_000, rateBasisPoints: 1), 1)
        XCTAssertEqual(Cents.interest(balanceCents: 9_999, rateBasisPoints: 1), 0)
        XCTAssertEqual(Cents.interest(balanceCents: 20_000, rateBasisPoints: 250), 500)
        XCTAssertEqual(Cents.interest(balanceCents: 19_999, rateBasisPoints: 250), 499)
        XCTAssertEqual(Cents.interest(balanceCents: 500, rateBasisPoints: 10_000), 500)
        XCTAssertEqual(Cents.interest(balanceCents: 0, rateBasisPoints: 100), 0)
        XCTAssertEqual(Cents.interest(balanceCents: -5_000, rateBasisPoints: 100), 0)
        XCTAssertEqual(Cents.interest(balanceCents: .min, rateBasisPoints: 100), 0)
        XCTAssertEqual(Cents.interest(balanceCents: 5_000, rateBasisPoints: 0), 0)
        XCTAssertEqual(Cents.interest(balanceCents: 5_000, rateBasisPoints: -100), 0)
    }

    func testInterestIsExactNearInt64Max() {
        let max = Int64.max  // 9223372036854775807
        XCTAssertEqual(Cents.interest(balanceCents: max, rateBasisPoints: 1), 922_337_203_685_477)
        XCTAssertEqual(Cents.interest(balanceCents: max, rateBasisPoints: 9_999), 9_222_449_699_651_090_329)
        XCTAssertEqual(Cents.interest(balanceCents: max, rateBasisPoints: 10_000), max)
        XCTAssertNil(Cents.interest(balanceCents: max, rateBasisPoints: 10_001))
        XCTAssertEqual(Cents.interest(balanceCents: max / 2, rateBasisPoints: 20_000), max - 1)
        XCTAssertNil(Cents.interest(balanceCents: max, rateBasisPoints: .max))
        XCTAssertEqual(Cents.interest(balanceCents: 1, rateBasisPoints: .max), Int64(Int.max / 10_000))
        // Against 128-bit arithmetic done by hand: (b × r) / 10,000 from the decimal digits.
        var rng = SplitMix64(seed: 10_000)
        for _ in 0..<2_000 {
            let b = rng.next(in: 1...max), r = Int(rng.next(in: 1...10_000))
            let (high, low) = UInt64(b).multipliedFullWidth(by: UInt64(r))
            let product = (Double(high) * 18_446_744_073_709_551_616 + Double(low))
            let got = Cents.interest(balanceCents: b, rateBasisPoints: r)!
            XCTAssertLessThanOrEqual(got, b)
            XCTAssertEqual(Double(got), product / 10_000, accuracy: product / 10_000 * 1e-12 + 1)
            // Exactly the floor: got × 10,000 ≤ b × r < (got + 1) × 10,000.
            let (gh, gl) = UInt64(got).multipliedFullWidth(by: 10_000)
            XCTAssertTrue((gh, gl) <= (high, low))
            let (nh, nl) = UInt64(got + 1).multipliedFullWidth(by: 10_000)
            XCTAssertTrue((high, low) < (nh, nl))
        }
    }
}
