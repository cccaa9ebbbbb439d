#if Postgres
import CLibPQ
import Foundation
import LedgerModel

/// The rows of one statement, in PostgreSQL's binary format. Immutable once received, so
/// it may be read from any thread.
public final class PGResult: @unchecked Sendable {
    let handle: OpaquePointer
    /// Number of rows.
    public let count: Int
    /// Number of columns.
    public let columns: Int
    /// Rows the statement changed (INSERT/UPDATE/DELETE), 0 for others.
    /// Rows the statement changed (INSERT/UPDATE/DELETE), 0 for others.
    public var affectedRows: Int { Int(String(cString: PQcmdTuples(handle))) ?? 0 }

    init(_ handle: OpaquePointer) {
        self.handle = handle
        count = Int(PQntuples(handle))
        columns = Int(PQnfields(handle))
    }

    deinit { PQclear(handle) }

    public var isEmpty: Bool { count == 0 }
    public var first: PGRow? { count > 0 ? PGRow(result: self, index: 0) : nil }
    public subscript(_ i: Int) -> PGRow {
        precondition(i >= 0 && i < count, "row \(i) of \(count)")
        return PGRow(result: self, index: i)
    }
    public var rows: [PGRow] { (0..<count).map { PGRow(result: self, index: $0) } }

    /// A column's name.
    public func columnName(_ c: Int) -> String { String(cString: PQfname(handle, Int32(c))) }
    /// A column's type oid.
    public func columnType(_ c: Int) -> UInt32 { PQftype(handle, Int32(c)) }
}

/// One row of a `PGResult`. The typed accessors check the column's type: reading a column
/// as a type it does not have is a programming error and stops the process with a message
/// naming the column (as does reading NULL through a non-optional accessor).
public struct PGRow: @unchecked Sendable {
    let result: PGResult
    let index: Int

    public func isNull(_ c: Int) -> Bool { PQgetisnull(result.handle, Int32(index), Int32(c)) == 1 }

    private func bytes(_ c: Int) -> UnsafeRawBufferPointer {
        let n = Int(PQgetlength(result.handle, Int32(index), Int32(c)))
        let p = PQgetvalue(result.handle, Int32(index), Int32(c))!
        return UnsafeRawBufferPointer(start: UnsafeRawPointer(p), count: n)
    }

    private func check(_ c: Int, _ allowed: Set<UInt32>, _ what: String) {
        precondition(c >= 0 && c < result.columns, "column \(c) of \(result.columns)")
        let t = result.columnType(c)
        precondition(allowed.contains(t), "column \(c) (\(result.columnName(c))) has type oid \(t), read as \(what)")
        precondition(!isNull(c), "column \(c) (\(result.columnName(c))) is NULL, read as non-optional \(what)")
    }

    private static let integerTypes: Set<UInt32> = [PGType.int2, PGType.int4, PGType.int8, PGType.oid]
    private static let textTypes: Set<UInt32> = [PGType.text, PGType.varchar, PGType.bpchar, PGType.name]
    private static let boolType: Set<UInt32> = [PGType.bool]
    private static let uuidType: Set<UInt32> = [PGType.uuid]
    private static let timestampTypes: Set<UInt32> = [PGType.timestamptz, PGType.timestamp]
    private static let byteaType: Set<UInt32> = [PGType.bytea]
    private static let float8Type: Set<UInt32> = [PGType.float8]

    /// An int2, int4 or int8 column.
    public func int(_ c: Int) -> Int64 {
        check(c, PGRow.integerTypes, "an integer")
        return PGBinary.integer(bytes(c))
    }
    public func optionalInt(_ c: Int) -> Int64? { isNull(c) ? nil : int(c) }

    public func bool(_ c: Int) -> Bool {
        check(c, PGRow.boolType, "a boolean")
        return bytes(c).first != 0
    }
    public func optionalBool(_ c: Int) -> Bool? { isNull(c) ? nil : bool(c) }

    /// A text-like column (text, varchar, char, name).
    public func string(_ c: Int) -> String {
        check(c, PGRow.textTypes, "text")
        return String(decoding: bytes(c), as: UTF8.self)
    }
    public func optionalString(_ c: Int) -> String? { isNull(c) ? nil : string(c) }

    /// A uuid column, as lowercase canonical text.
    public func uuid(_ c: Int) -> String {
        check(c, PGRow.uuidType, "a uuid")
        let b = bytes(c)
        precondition(b.count == 16)
        return UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
            .lowercased
    }
    public func optionalUUID(_ c: Int) -> String? { isNull(c) ? nil : uuid(c) }

    /// A timestamptz (or timestamp, taken as UTC) column, in milliseconds since 1970
    /// (microseconds rounded toward minus infinity).
    public func timestampMs(_ c: Int) -> Int64 {
        check(c, PGRow.timestampTypes, "a timestamp")
        let micros = PGBinary.integer(bytes(c))
        let unix = micros.addingReportingOverflow(PGBinary.postgresEpochMicros)
        precondition(!unix.overflow, "column \(c) (\(result.columnName(c))) is an infinite timestamp")
        let (q, r) = unix.partialValue.quotientAndRemainder(dividingBy: 1000)
        return r < 0 ? q - 1 : q
    }
    public func optionalTimestampMs(_ c: Int) -> Int64? { isNull(c) ? nil : timestampMs(c) }

    public func bytea(_ c: Int) -> [UInt8] {
        check(c, PGRow.byteaType, "bytes")
        return Array(bytes(c))
    }

    public func double(_ c: Int) -> Double {
        check(c, PGRow.float8Type, "a float8")
        return Double(bitPattern: UInt64(bitPattern: PGBinary.integer(bytes(c))))
    }
}
#endif
