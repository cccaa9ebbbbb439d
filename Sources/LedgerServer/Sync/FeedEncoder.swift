import LedgerModel
import SQLiteKit

/// Writes change-feed JSON straight from SQLite rows into bytes.
///
/// The output is exactly `Child.json` / `LedgerTransaction.json` serialized (same members,
/// same order), without building a `JSONValue` tree per record: a 1000-record page is the
/// hot path of a first pull.
struct FeedEncoder {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int) { bytes.reserveCapacity(capacity) }

    /// Appends raw ASCII (member names and punctuation).
    mutating func raw(_ s: StaticString) {
        s.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// Appends a JSON string literal.
    mutating func string(_ s: String) {
        JSONValue.writeString(s, into: &bytes)
    }

    mutating func optionalString(_ s: String?) {
        if let s { string(s) } else { raw("null") }
    }

    mutating func int(_ v: Int64) {
        if v == 0 { bytes.append(48); return }
        var u = v.magnitude
        if v < 0 { bytes.append(45) }
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var n = 0
        withUnsafeMutableBytes(of: &digits) { d in
            while u > 0 { d[n] = UInt8(48 + u % 10); u /= 10; n += 1 }
            for i in stride(from: n - 1, through: 0, by: -1) { bytes.append(d[i]) }
        }
    }

    mutating func bool(_ b: Bool) {
        if b { raw("true") } else { raw("false") }
    }

    /// `"YYYY-MM-DDTHH:MM:SS.mmmZ"`, written by `Timestamp.write` (as `Timestamp.format`).
    mutating func timestamp(_ ms: Int64) {
        bytes.append(34)
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 24) { buffer in
            let n = Timestamp.write(ms: ms, into: buffer)
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[..<n]))
        }
        bytes.append(34)
    }

    /// Appends a child from a row in `LedgerStore.childColumns` order.
    mutating func child(_ r: SQLiteRow) {
        raw("{\"id\":"); string(r.string(0))
        raw(",\"householdId\":"); string(r.string(1))
        raw(",\"name\":"); string(r.string(2))
        raw(",\"sortOrder\":"); int(r.int(3))
        raw(",\"archived\":"); bool(r.bool(4))
        raw(",\"createdAt\":"); timestamp(r.int(5))
        raw(",\"modifiedAt\":"); timestamp(r.int(6))
        raw(",\"modifiedBy\":"); string(r.string(7))
        raw(",\"changeTag\":"); string(r.string(8))
        raw(",\"balanceCents\":"); int(r.int(9))
        bytes.append(125)
    }

    /// Appends a transaction from a row in `LedgerStore.txColumns` order.
    mutating func transaction(_ r: SQLiteRow) {
        raw("{\"id\":"); string(r.string(0))
        raw(",\"householdId\":"); string(r.string(1))
        raw(",\"childId\":"); string(r.string(2))
        raw(",\"amountCents\":"); int(r.int(3))
        raw(",\"note\":"); string(r.string(4))
        raw(",\"source\":"); string(r.string(5))
        raw(",\"createdAt\":"); timestamp(r.int(6))
        raw(",\"recordedAt\":"); timestamp(r.int(7))
        raw(",\"authorAccountId\":"); string(r.string(8))
        raw(",\"reversesId\":"); optionalString(r.optionalString(9))
        raw(",\"reversedById\":"); optionalString(r.optionalString(10))
        bytes.append(125)
    }

    /// Appends an already built JSON value.
    mutating func value(_ v: JSONValue) { v.write(into: &bytes) }
}
