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
    /// Where a transaction's bytes are written first (`LedgerTransaction.writeJSON`, the
    /// answer's own encoder) and then appended in one copy: each append to `bytes` costs
    /// about 90 instructions, and a transaction took some twenty-five of them, one per member.
    private var scratch: [UInt8] = []

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
        let pot: String
        if let own = t.pointee.potId {
            pot = own
        } else if let known = defaultPot, known.child == t.pointee.childId {
            pot = known.pot
        } else {
            pot = PotRecord.resolvedId(of: t.pointee)
            defaultPot = (t.pointee.childId, pot)
        }
        // The most bytes `writeJSON` writes, from the lengths alone (every byte of every
        // string escaped as `\u00XX`, no scan): the members' names, two timestamps and a
        // decimal fit in the 304.
        let strings = t.pointee.id.utf8.count + t.pointee.householdId.utf8.count + t.pointee.childId.utf8.count
            + t.pointee.note.utf8.count + t.pointee.source.rawValue.utf8.count + t.pointee.authorAccountId.utf8.count
            + (t.pointee.reversesId?.utf8.count ?? 0) + (t.pointee.reversedById?.utf8.count ?? 0) + pot.utf8.count
        let bound = 304 + ByteWriter.jsonStringBound(strings) + 2 * 8
        if scratch.count < bound { scratch = [UInt8](repeating: 0, count: max(bound, 4096)) }
        let n = scratch.withUnsafeMutableBufferPointer { buffer -> Int in
            var w = ByteWriter(buffer)
            t.pointee.writeJSON(&w, resolvedPotId: pot)
            return w.count
        }
        scratch.withUnsafeBufferPointer { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: $0[..<n])) }
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
