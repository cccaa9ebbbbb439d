import LedgerCore
import SQLiteKit

/// SQLite keeps ids as text and times as milliseconds.
extension SQLiteRow: StorageRow {
    @usableFromInline package func optionalBool(_ column: Int) -> Bool? { optionalInt(column).map { $0 != 0 } }
    @usableFromInline package func id(_ column: Int) -> String { string(column) }
    @usableFromInline package func optionalID(_ column: Int) -> String? { optionalString(column) }
    @usableFromInline package func time(_ column: Int) -> Int64 { int(column) }
    @usableFromInline package func optionalTime(_ column: Int) -> Int64? { optionalInt(column) }
    @usableFromInline package func bytes(_ column: Int) -> [UInt8] { blob(column) }
}
