/// A database row read by position: both backends' rows adopt it, so each record is read
/// by one decoding initializer (`init(row:at:)`, as GRDB's `FetchableRecord.init(row:)`)
/// whichever database it came from. Values the two store differently are read by meaning:
/// an id is text in SQLite and a `uuid` in PostgreSQL, a time is milliseconds in SQLite
/// and a `timestamptz` in PostgreSQL.
@usableFromInline package protocol StorageRow {
    func isNull(_ column: Int) -> Bool
    /// The text ("" for NULL).
    func string(_ column: Int) -> String
    func optionalString(_ column: Int) -> String?
    /// The integer (0 for NULL).
    func int(_ column: Int) -> Int64
    func optionalInt(_ column: Int) -> Int64?
    func bool(_ column: Int) -> Bool
    func optionalBool(_ column: Int) -> Bool?
    /// A record's id, lowercase.
    func id(_ column: Int) -> String
    func optionalID(_ column: Int) -> String?
    /// A time, in milliseconds since the epoch.
    func time(_ column: Int) -> Int64
    func optionalTime(_ column: Int) -> Int64?
    /// Binary data.
    func bytes(_ column: Int) -> [UInt8]
}

extension Array {
    /// `rows` decoded in order, each record made in the array's own storage (no copy of
    /// it on the way: a feed page decodes up to a thousand).
    @inlinable
    package init<Row: StorageRow>(decoding rows: [Row], _ decode: (Row) -> Element) {
        self.init(unsafeUninitializedCapacity: rows.count) { buffer, count in
            for i in rows.indices { (buffer.baseAddress! + i).initialize(to: decode(rows[i])) }
            count = rows.count
        }
    }
}

extension KeyedPage {
    /// One page from the rows a list read with a limit of one more than `limit`: the first
    /// `limit` decoded, and, when a row beyond them was read, the position of the last one
    /// (read from its row and record).
    @inlinable
    package init<Row: StorageRow>(rows: [Row], limit: Int, item: (Row) -> Item, position: (Row, Item) -> Position) {
        let count = Swift.max(0, Swift.min(rows.count, limit))
        let items = [Item](unsafeUninitializedCapacity: count) { buffer, made in
            for i in 0..<count { (buffer.baseAddress! + i).initialize(to: item(rows[i])) }
            made = count
        }
        self.init(items: items, next: rows.count > limit && count > 0 ? position(rows[count - 1], items[count - 1]) : nil)
    }
}
