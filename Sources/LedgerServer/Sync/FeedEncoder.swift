import LedgerCore
import LedgerModel

/// Writes change-feed JSON straight from the records into bytes.
///
/// The output is exactly `Child.json` / `LedgerTransaction.json` / `HouseholdRecord.json`
/// serialized (same members, same order), without building a `JSONValue` tree per record:
/// a 1000-record page is the hot path of a first pull.
struct FeedEncoder {
    private(set) var bytes: [UInt8] = []
    /// The last child whose default pot was named, and that pot's id (a page's transactions
    /// come a few children at a time: one hash per run of them, not one per transaction).
    private var defaultPot: (child: String, pot: String)?

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

    /// Appends the child at `c` as `Child.json` serializes it (read in place, not copied).
    mutating func child(_ c: UnsafePointer<Child>) {
        raw("{\"id\":"); string(c.pointee.id)
        raw(",\"householdId\":"); string(c.pointee.householdId)
        raw(",\"name\":"); string(c.pointee.name)
        raw(",\"sortOrder\":"); int(c.pointee.sortOrder)
        raw(",\"archived\":"); bool(c.pointee.archived)
        raw(",\"createdAt\":"); timestamp(c.pointee.createdAt)
        raw(",\"modifiedAt\":"); timestamp(c.pointee.modifiedAt)
        raw(",\"modifiedBy\":"); string(c.pointee.modifiedBy)
        raw(",\"changeTag\":"); string(c.pointee.changeTag)
        raw(",\"balanceCents\":"); int(c.pointee.balanceCents)
        bytes.append(125)
    }

    /// Appends the transaction at `t` as `LedgerTransaction.json` serializes it (read in
    /// place, not copied).
    mutating func transaction(_ t: UnsafePointer<LedgerTransaction>) {
        raw("{\"id\":"); string(t.pointee.id)
        raw(",\"householdId\":"); string(t.pointee.householdId)
        raw(",\"childId\":"); string(t.pointee.childId)
        raw(",\"amountCents\":"); int(t.pointee.amountCents)
        raw(",\"note\":"); string(t.pointee.note)
        raw(",\"source\":"); string(t.pointee.source.rawValue)
        raw(",\"createdAt\":"); timestamp(t.pointee.createdAt)
        raw(",\"recordedAt\":"); timestamp(t.pointee.recordedAt)
        raw(",\"authorAccountId\":"); string(t.pointee.authorAccountId)
        raw(",\"reversesId\":"); optionalString(t.pointee.reversesId)
        raw(",\"reversedById\":"); optionalString(t.pointee.reversedById)
        raw(",\"potId\":")
        if let pot = t.pointee.potId {
            string(pot)
        } else if let known = defaultPot, known.child == t.pointee.childId {
            string(known.pot)
        } else {
            let pot = PotRecord.resolvedId(of: t.pointee)
            defaultPot = (t.pointee.childId, pot)
            string(pot)
        }
        bytes.append(125)
    }

    /// Appends `h` as `h.json(m)` serializes it.
    mutating func household(_ h: HouseholdRecord, _ m: Membership) {
        raw("{\"id\":"); string(h.id)
        raw(",\"name\":"); string(h.name)
        raw(",\"currency\":"); string(h.currency)
        raw(",\"ownerAccountId\":"); string(h.ownerAccountId)
        raw(",\"createdAt\":"); timestamp(h.createdAt)
        raw(",\"modifiedAt\":"); timestamp(h.modifiedAt)
        raw(",\"changeTag\":"); string(h.changeTag)
        raw(",\"role\":"); string(m.role.rawValue)
        raw(",\"permission\":"); string(m.permission.rawValue)
        raw(",\"shared\":"); bool(h.shared)
        bytes.append(125)
    }

    /// Appends an already built JSON value.
    mutating func value(_ v: JSONValue) { v.write(into: &bytes) }

    /// The elements of a JSON array (between its brackets), each record's JSON in turn.
    mutating func values<Record>(_ records: [Record], _ json: (Record) -> JSONValue) {
        for (i, r) in records.enumerated() {
            if i > 0 { raw(",") }
            value(json(r))
        }
    }
}
