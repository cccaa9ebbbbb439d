import LedgerModel
import SQLiteKit

/// Reads one page of a household's change feed.
///
/// Every accepted write advances `households.seq` and stamps each record it changed with
/// that value, inside the writer's transaction. The feed is therefore the records with
/// `seq > since`, oldest first, read from one WAL snapshot: a page never sees half a
/// commit, and because commits are serialised by the single writer in `seq` order, a
/// snapshot always holds a gap-free prefix of the sequence. Its cost grows with the page,
/// not with the ledger (indexes on `(household_id, seq)`).
enum ChangeFeed {
    /// One page, as read.
    struct Page {
        /// The JSON response body: `{household, children, transactions, access, nextToken, moreComing}`.
        var body: [UInt8]
        /// Where the page ends.
        var nextToken: SyncToken
        /// The position the page started after (0 for a full pull).
        var since: Int64
        /// Records on the page.
        var records: Int
        var moreComing: Bool

        /// Whether the household changed after `since` (the page holds something new).
        var hasNews: Bool { nextToken.seq > since || records > 0 }
    }

    /// Most records per page; `limit` is validated against it.
    static let maxLimit = 1000
    static let defaultLimit = 500

    private struct Entry {
        var seq: Int64
        var isChild: Bool
        var row: SQLiteRow
    }

    /// Reads the page after `since` (nil: from the beginning) in one snapshot, checking the
    /// caller's access first. Throws 410 `token_expired` for a token this household cannot use.
    static func read(_ db: SQLiteConnection, household: String, account: String,
                     since: String?, limit: Int) throws -> Page {
        try db.execute("BEGIN")
        defer { try? db.execute("COMMIT") }
        let membership = try Access.check(db, household: household, account: account, need: .read)
        guard let h = try db.queryOne("SELECT incarnation, seq FROM households WHERE id = ?", [.text(household)]) else {
            throw APIError.notFound("No such household.")
        }
        let incarnation = h.int(0), headSeq = h.int(1)
        var after: Int64 = 0
        if let since {
            guard let t = SyncToken.decode(since), t.household == household, t.incarnation == incarnation,
                  t.seq <= headSeq else { throw SyncToken.expired }
            after = t.seq
        }

        let (entries, endSeq, moreComing) = try FeedPaging.page(
            changes(db, household: household, after: after, limit: limit + 1), limit: limit, headSeq: headSeq, seq: \.seq
        ) { s in try changes(db, household: household, after: s - 1, limit: Int.max, onlySeq: s) }

        let (householdJSON, _) = try LedgerStore.householdJSON(db, id: household, membership: membership)
        let token = SyncToken(household: household, incarnation: incarnation, seq: endSeq)
        var out = FeedEncoder(capacity: 512 + entries.count * 400)
        out.raw("{\"household\":"); out.value(householdJSON)
        out.raw(",\"children\":[")
        var first = true
        for e in entries where e.isChild {
            if !first { out.raw(",") }
            out.child(e.row); first = false
        }
        out.raw("],\"transactions\":[")
        first = true
        for e in entries where !e.isChild {
            if !first { out.raw(",") }
            out.transaction(e.row); first = false
        }
        out.raw("],\"access\":"); out.value(membership.accessJSON)
        out.raw(",\"nextToken\":"); out.string(token.encoded)
        out.raw(",\"moreComing\":"); out.bool(moreComing)
        out.raw("}")
        let body = out.bytes
        return Page(body: body, nextToken: token, since: after, records: entries.count, moreComing: moreComing)
    }

    /// Children and transactions with `seq > after` (or `seq == onlySeq`), merged oldest
    /// change first, children before transactions within one seq; at most `limit`.
    private static func changes(_ db: SQLiteConnection, household: String, after: Int64, limit: Int,
                                onlySeq: Int64? = nil) throws -> [Entry] {
        let bound = Int64(min(limit, Int(Int32.max)))
        let condition = onlySeq == nil ? "seq > ?" : "seq = ?"
        let key: SQLiteValue = .integer(onlySeq ?? after)
        let kids = try db.query("SELECT \(LedgerStore.childColumns), seq FROM children WHERE household_id = ? AND \(condition) ORDER BY seq LIMIT ?",
                                [.text(household), key, .integer(bound)])
        let txs = try db.query("SELECT \(LedgerStore.txColumns), seq FROM transactions WHERE household_id = ? AND \(condition) ORDER BY seq LIMIT ?",
                               [.text(household), key, .integer(bound)])
        var out: [Entry] = []
        out.reserveCapacity(min(limit, kids.count + txs.count))
        var i = 0, j = 0
        while out.count < limit && (i < kids.count || j < txs.count) {
            if j >= txs.count || (i < kids.count && kids[i].int(10) <= txs[j].int(11)) {
                out.append(Entry(seq: kids[i].int(10), isChild: true, row: kids[i])); i += 1
            } else {
                out.append(Entry(seq: txs[j].int(11), isChild: false, row: txs[j])); j += 1
            }
        }
        return out
    }
}
