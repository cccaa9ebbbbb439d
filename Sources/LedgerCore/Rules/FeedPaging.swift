/// Where a change-feed page ends. A page never splits one commit's records: its token
/// promises that every record stamped with a sequence value up to it was delivered.
package enum FeedPaging {
    /// Trims `entries` (the first `limit + 1` changes after the page's start, oldest first)
    /// to one page. When a single commit holds more than `limit` records, the page is that
    /// whole commit, read again by `wholeCommit(seq)`.
    package static func page<Entry>(_ entries: [Entry], limit: Int, headSeq: Int64, seq: (Entry) -> Int64,
                            wholeCommit: (Int64) throws -> [Entry]) rethrows -> (entries: [Entry], endSeq: Int64, moreComing: Bool) {
        guard entries.count > limit else { return (entries, headSeq, false) }
        var cut = limit
        while cut > 0 && seq(entries[cut - 1]) == seq(entries[cut]) { cut -= 1 }
        if cut == 0 {
            let s = seq(entries[0])
            return (try wholeCommit(s), s, s < headSeq)
        }
        return (Array(entries[..<cut]), seq(entries[cut - 1]), true)
    }
}
