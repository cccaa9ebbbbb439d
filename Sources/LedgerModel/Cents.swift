/// Money in the smallest currency unit, exact: Int64 cents, never floating point.
public enum Cents {
    /// Largest |amountCents| of one transaction: 100,000,000,000.
    public static let maxTransactionMagnitude: Int64 = 100_000_000_000

    /// `a + b`, or nil when it would leave Int64.
    public static func add(_ a: Int64, _ b: Int64) -> Int64? {
        let (r, overflow) = a.addingReportingOverflow(b)
        return overflow ? nil : r
    }

    /// Formats cents as a decimal string with two fraction digits: -525 → "-5.25".
    public static func format(_ cents: Int64) -> String {
        let negative = cents < 0
        let magnitude = cents.magnitude
        let units = magnitude / 100
        let frac = magnitude % 100
        return (negative ? "-" : "") + String(units) + "." + (frac < 10 ? "0" : "") + String(frac)
    }

    /// Parses a non-negative decimal amount in currency units ("5", "5.2", "5.25") into cents
    /// without floating point; nil for anything else (signs, exponents, 3+ decimals, overflow).
    public static func parse(_ text: String) -> Int64? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count <= 2, let whole = parts.first, !whole.isEmpty,
              whole.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
        var fraction: Int64 = 0
        if parts.count == 2 {
            let f = parts[1]
            guard (1...2).contains(f.utf8.count), f.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
            fraction = Int64(f)! * (f.utf8.count == 1 ? 10 : 1)
        }
        guard let units = Int64(whole) else { return nil }
        let (scaled, o1) = units.multipliedReportingOverflow(by: 100)
        guard !o1 else { return nil }
        return add(scaled, fraction)
    }
}
