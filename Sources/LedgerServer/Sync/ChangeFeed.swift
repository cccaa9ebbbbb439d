import LedgerCore
import LedgerModel

/// The change feed's page sizes and its wire form.
///
/// Every accepted write advances the household's change sequence and stamps each record it
/// changed with the new value, inside its write transaction (see `LedgerStorage`). The
/// feed is therefore the records with `seq > since`, oldest first, read from one snapshot
/// (`LedgerReading.feedPage`): a page never sees half a commit, and because per-household
/// changes commit in sequence order, a snapshot always holds a gap-free prefix of the
/// sequence. Its cost grows with the page, not with the ledger.
enum ChangeFeed {
    /// Most records per page; `limit` is validated against it.
    static let maxLimit = 1000
    static let defaultLimit = 500
}

extension FeedPage {
    /// The JSON response body `{household, children, transactions, access, nextToken,
    /// moreComing}`, written straight from the records into bytes.
    var body: [UInt8] {
        // A transaction with a short note is about 420 bytes since it names its pot: room
        // for that, so a page is written without growing (and copying) its buffer.
        var out = FeedEncoder(capacity: 512 + records * 448)
        out.raw("{\"household\":")
        if child == nil {
            out.household(household, membership)
        } else {
            // A child's device sees the household's name and currency, nothing about its members.
            out.value(.object(["id": .string(household.id), "name": .string(household.name),
                               "currency": .string(household.currency)]))
        }
        out.raw(",\"children\":[")
        // Through buffer pointers: each record is read in place, never copied.
        children.withUnsafeBufferPointer { records in
            for i in records.indices {
                if i > 0 { out.raw(",") }
                out.child(records.baseAddress! + i)
            }
        }
        out.raw("],\"transactions\":[")
        transactions.withUnsafeBufferPointer { records in
            for i in records.indices {
                if i > 0 { out.raw(",") }
                out.transaction(records.baseAddress! + i)
            }
        }
        out.raw("],\"schedules\":[")
        out.values(schedules, \.json)
        out.raw("],\"pots\":[")
        out.values(pots, \.json)
        out.raw("],\"requests\":[")
        out.values(requests, \.json)
        out.raw("],\"access\":")
        out.value(child == nil ? membership.accessJSON : .object(["role": .string("child"), "permission": .string("readOnly")]))
        out.raw(",\"nextToken\":"); out.string(next.token)
        out.raw(",\"moreComing\":"); out.bool(moreComing)
        out.raw("}")
        return out.bytes
    }
}
