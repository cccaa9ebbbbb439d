import LedgerModel

/// Parses money typed by a person into cents, exactly, without floating point.
public enum AmountParser {
    /// Why an amount was refused.
    public enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
        case invalid(String)
        case tooManyDecimals(String)
        case zero
        case tooLarge(String)

        public var description: String {
            switch self {
            case .invalid(let t): return "'\(t)' is not an amount (use digits like 5 or 5.25)"
            case .tooManyDecimals(let t): return "'\(t)' has more than two decimals"
            case .zero: return "amount must be more than zero"
            case .tooLarge(let t): return "'\(t)' is too large (at most 1000000000.00)"
            }
        }
    }

    /// Parses `5`, `5.2`, `5.25`, `0.5` into positive cents (500, 520, 525, 50).
    /// Signs, exponents, separators, more than two decimals, zero and amounts above
    /// 1,000,000,000.00 are refused.
    public static func cents(from text: String) throws(Failure) -> Int64 {
        guard let cents = Cents.parse(text) else {
            let parts = text.split(separator: ".", omittingEmptySubsequences: false)
            let digitsOnly = text.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || $0 == 46 }
            if digitsOnly, parts.count == 2, parts[1].count > 2, !parts[0].isEmpty { throw .tooManyDecimals(text) }
            if digitsOnly, parts.count <= 2, !(parts.first?.isEmpty ?? true), !(parts.last?.isEmpty ?? true) {
                throw .tooLarge(text)
            }
            throw .invalid(text)
        }
        if cents == 0 { throw .zero }
        if cents > Cents.maxTransactionMagnitude { throw .tooLarge(text) }
        return cents
    }
}
