#if Postgres
import Foundation
import LedgerModel

/// A query parameter. Each case is sent with its PostgreSQL type, in binary where that is
/// exact (integers, booleans, uuids, timestamps, bytes) and as text for text.
public enum PGValue: Sendable, Equatable, Hashable {
    case null
    case text(String)
    case int(Int64)
    case bool(Bool)
    case bytes([UInt8])
    /// A uuid in its canonical text form (any case).
    case uuid(String)
    /// A `timestamptz`, as milliseconds since 1970-01-01 UTC.
    case timestamp(ms: Int64)
    /// A one-dimensional `uuid[]` (nil elements NULL), sent in binary: the server copies
    /// 16 bytes an element instead of parsing an array literal and each uuid's text.
    case uuidArray([String?])
    /// A one-dimensional `bigint[]` (nil elements NULL), sent in binary.
    case intArray([Int64?])
    /// A one-dimensional `text[]` (nil elements NULL), sent in binary (no quoting, no parse).
    case textArray([String?])
    /// A one-dimensional `boolean[]`, sent in binary.
    case boolArray([Bool])

    public static func optionalText(_ v: String?) -> PGValue { v.map { .text($0) } ?? .null }
    public static func optionalInt(_ v: Int64?) -> PGValue { v.map { .int($0) } ?? .null }
    public static func optionalUUID(_ v: String?) -> PGValue { v.map { .uuid($0) } ?? .null }
    public static func optionalTimestamp(ms v: Int64?) -> PGValue { v.map { .timestamp(ms: $0) } ?? .null }

    /// The parameter's type oid (0 lets the server infer it from the statement).
    var oid: UInt32 {
        switch self {
        case .null: return 0
        case .text: return PGType.text
        case .int: return PGType.int8
        case .bool: return PGType.bool
        case .bytes: return PGType.bytea
        case .uuid: return PGType.uuid
        case .timestamp: return PGType.timestamptz
        case .uuidArray: return PGType.uuidArray
        case .intArray: return PGType.int8Array
        case .textArray: return PGType.textArray
        case .boolArray: return PGType.boolArray
        }
    }

    /// The wire bytes and format (0 text, 1 binary); nil for NULL.
    func encoded() throws(PGError) -> (bytes: [UInt8], format: Int32)? {
        switch self {
        case .null: return nil
        case .text(let s): return (Array(s.utf8), 0)
        case .int(let v): return (PGBinary.bigEndian(UInt64(bitPattern: v)), 1)
        case .bool(let b): return ([b ? 1 : 0], 1)
        case .bytes(let b): return (b, 1)
        case .uuid(let s):
            guard let u = LedgerIDs.parse(s) else { throw PGError(kind: .invalidParameter, message: "not a uuid: \(s)") }
            return (withUnsafeBytes(of: u.uuid) { Array($0) }, 1)
        case .timestamp(let ms):
            let (micros, overflow) = ms.multipliedReportingOverflow(by: 1000)
            guard !overflow else { throw PGError(kind: .invalidParameter, message: "timestamp out of range: \(ms) ms") }
            let (sinceEpoch2000, o2) = micros.subtractingReportingOverflow(PGBinary.postgresEpochMicros)
            guard !o2 else { throw PGError(kind: .invalidParameter, message: "timestamp out of range: \(ms) ms") }
            return (PGBinary.bigEndian(UInt64(bitPattern: sinceEpoch2000)), 1)
        case .uuidArray(let items):
            var out = PGBinary.arrayHeader(count: items.count, hasNull: items.contains(nil), element: PGType.uuid,
                                           capacity: items.count * 20)
            for item in items {
                guard let item else { PGBinary.appendNull(&out); continue }
                guard let u = LedgerIDs.parse(item) else {
                    throw PGError(kind: .invalidParameter, message: "not a uuid: \(item)")
                }
                PGBinary.append(UInt32(16), to: &out)
                withUnsafeBytes(of: u.uuid) { out.append(contentsOf: $0) }
            }
            return (out, 1)
        case .intArray(let items):
            var out = PGBinary.arrayHeader(count: items.count, hasNull: items.contains(nil), element: PGType.int8,
                                           capacity: items.count * 12)
            for item in items {
                guard let item else { PGBinary.appendNull(&out); continue }
                PGBinary.append(UInt32(8), to: &out)
                PGBinary.append(UInt64(bitPattern: item), to: &out)
            }
            return (out, 1)
        case .textArray(let items):
            var size = 0
            for item in items { size += 4 + (item?.utf8.count ?? 0) }
            var out = PGBinary.arrayHeader(count: items.count, hasNull: items.contains(nil), element: PGType.text,
                                           capacity: size)
            for item in items {
                guard var item else { PGBinary.appendNull(&out); continue }
                item.withUTF8 { bytes in
                    PGBinary.append(UInt32(bytes.count), to: &out)
                    out.append(contentsOf: bytes)
                }
            }
            return (out, 1)
        case .boolArray(let items):
            var out = PGBinary.arrayHeader(count: items.count, hasNull: false, element: PGType.bool,
                                           capacity: items.count * 5)
            for item in items {
                PGBinary.append(UInt32(1), to: &out)
                out.append(item ? 1 : 0)
            }
            return (out, 1)
        }
    }
}

/// Type oids this layer reads and writes (`pg_type.oid`, fixed for built-in types).
public enum PGType {
    public static let bool: UInt32 = 16
    public static let bytea: UInt32 = 17
    public static let name: UInt32 = 19
    public static let int8: UInt32 = 20
    public static let int2: UInt32 = 21
    public static let int4: UInt32 = 23
    public static let text: UInt32 = 25
    public static let oid: UInt32 = 26
    public static let float8: UInt32 = 701
    public static let bpchar: UInt32 = 1042
    public static let varchar: UInt32 = 1043
    public static let timestamp: UInt32 = 1114
    public static let timestamptz: UInt32 = 1184
    public static let numeric: UInt32 = 1700
    public static let uuid: UInt32 = 2950
    public static let void: UInt32 = 2278
    public static let boolArray: UInt32 = 1000
    public static let textArray: UInt32 = 1009
    public static let int8Array: UInt32 = 1016
    public static let uuidArray: UInt32 = 2951
}

/// Big-endian helpers for the binary wire format.
enum PGBinary {
    /// 2000-01-01T00:00:00Z in microseconds since 1970-01-01 (PostgreSQL's timestamp epoch).
    static let postgresEpochMicros: Int64 = 946_684_800_000_000

    static func bigEndian(_ v: UInt64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: v >> (56 - 8 * UInt64($0))) }
    }

    static func append(_ v: UInt32, to out: inout [UInt8]) {
        for shift in stride(from: 24, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: v >> UInt32(shift))) }
    }

    static func append(_ v: UInt64, to out: inout [UInt8]) {
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: v >> UInt64(shift))) }
    }

    /// A NULL element of a binary array: length -1, no bytes.
    static func appendNull(_ out: inout [UInt8]) { append(UInt32.max, to: &out) }

    /// The binary array header (`array_recv`): one dimension of `count` elements from 1
    /// (no dimension at all when empty, as the server sends `{}`).
    static func arrayHeader(count: Int, hasNull: Bool, element: UInt32, capacity: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(20 + capacity)
        append(UInt32(count == 0 ? 0 : 1), to: &out)
        append(UInt32(hasNull ? 1 : 0), to: &out)
        append(element, to: &out)
        guard count > 0 else { return out }
        append(UInt32(count), to: &out)
        append(UInt32(1), to: &out)
        return out
    }

    static func integer(_ p: UnsafeRawBufferPointer) -> Int64 {
        var v: UInt64 = 0
        for b in p { v = (v << 8) | UInt64(b) }
        switch p.count {
        case 2: return Int64(Int16(truncatingIfNeeded: v))
        case 4: return Int64(Int32(truncatingIfNeeded: v))
        default: return Int64(bitPattern: v)
        }
    }
}
#endif
