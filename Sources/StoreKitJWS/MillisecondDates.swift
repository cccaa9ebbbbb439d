import Foundation

/// App Store JSON carries dates as integer milliseconds since 1970.
extension KeyedDecodingContainer {
    /// Decodes an integer-milliseconds date; absent or `null` is `nil`, a fraction or a string is an error.
    func decodeMillisecondsIfPresent(forKey key: Key) throws -> Date? {
        try decodeIfPresent(Int64.self, forKey: key).map(JWSTransactionDecodedPayload.date(milliseconds:))
    }
}

extension KeyedEncodingContainer {
    /// Encodes `date` as integer milliseconds; `nil` is omitted.
    mutating func encodeMillisecondsIfPresent(_ date: Date?, forKey key: Key) throws {
        try encodeIfPresent(date.map(JWSTransactionDecodedPayload.milliseconds), forKey: key)
    }
}
