import Foundation

extension Cents {
    /// `amountCents` shared across pots by `percents`, in whole cents, in the order given:
    /// each pot gets `amountCents × percent / 100` rounded toward zero, and what rounding
    /// leaves over goes to the first pot, so the shares always add up to `amountCents` exactly
    /// and all have its sign. 0.10 by 33/33/34 % is 4, 3 and 3 cents.
    ///
    /// Throws when `percents` is empty, names a pot twice, has a percent outside 1…100, or
    /// does not add up to 100. A share can be 0 (1 % of 50 cents): write no transaction for it.
    public static func split(amountCents: Int64, percents: [(potId: UUID, percent: Int)]) throws(ScheduleError) -> [(potId: UUID, amountCents: Int64)] {
        guard !percents.isEmpty else { throw .emptySplit }
        var seen = Set<UUID>()
        var sum = 0
        for (pot, percent) in percents {
            guard (1...100).contains(percent) else { throw .splitPercentOutOfRange(potId: pot, percent: percent) }
            guard seen.insert(pot).inserted else { throw .duplicateSplitPot(pot) }
            sum += percent
        }
        guard sum == 100 else { throw .splitPercentsDoNotSumTo100(sum) }

        // |amount| × percent / 100 on the magnitude (Int64.min's too) in 128 bits: no overflow.
        let magnitude = amountCents.magnitude
        let shares = percents.map { (pot, percent) -> (potId: UUID, magnitude: UInt64) in
            let (high, low) = magnitude.multipliedFullWidth(by: UInt64(percent))
            return (pot, UInt64(100).dividingFullWidth((high, low)).quotient)
        }
        // Each share is at most its percent of the magnitude, so the rest is at most it too.
        let rest = magnitude - shares.reduce(0) { $0 + $1.magnitude }
        return shares.enumerated().map { i, share in
            let m = i == 0 ? share.magnitude + rest : share.magnitude
            return (share.potId, amountCents < 0 ? Int64(truncatingIfNeeded: 0 &- m) : Int64(m))
        }
    }

    /// Interest of `rateBasisPoints` (1/100 of a percent) on `balanceCents` for one period:
    /// ⌊balanceCents × rateBasisPoints / 10,000⌋, exact (computed in 128 bits); 0 when the
    /// balance or the rate is not positive (interest never takes money). 1 % of 12.34 is 12
    /// cents; 1 % of 99 cents is 0. Nil when the result would not fit an Int64 (a rate above
    /// 10,000, 100 %, on a huge balance).
    public static func interest(balanceCents: Int64, rateBasisPoints: Int) -> Int64? {
        guard balanceCents > 0, rateBasisPoints > 0 else { return 0 }
        let (high, low) = UInt64(balanceCents).multipliedFullWidth(by: UInt64(rateBasisPoints))
        // The quotient fits 64 bits only when the high word is below the divisor.
        guard high < 10_000 else { return nil }
        let q = UInt64(10_000).dividingFullWidth((high, low)).quotient
        return q <= UInt64(Int64.max) ? Int64(q) : nil
    }
}
