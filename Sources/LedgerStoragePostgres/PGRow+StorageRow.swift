#if Postgres
import LedgerCore
import PostgresKit

/// PostgreSQL keeps ids as `uuid` and times as `timestamptz`.
extension PGRow: StorageRow {
    @usableFromInline package func id(_ column: Int) -> String { uuid(column) }
    @usableFromInline package func optionalID(_ column: Int) -> String? { optionalUUID(column) }
    @usableFromInline package func time(_ column: Int) -> Int64 { timestampMs(column) }
    @usableFromInline package func optionalTime(_ column: Int) -> Int64? { optionalTimestampMs(column) }
    @usableFromInline package func bytes(_ column: Int) -> [UInt8] { bytea(column) }
}
#endif
