// Writing bytes without building strings: literals and UTF-8 appended in one copy, decimals
// and JSON string literals written into a fixed buffer. No dependencies and no platform
// imports: the HTTP layer, the shared model and the device SDK all build on it.

extension Array where Element == UInt8 {
    /// Appends the UTF-8 bytes of a literal as one copy of contiguous bytes (appending
    /// `"…".utf8` goes through the generic sequence path, several times slower).
    @inlinable @inline(__always)
    public mutating func append(literal: StaticString) {
        append(contentsOf: UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    /// Appends the UTF-8 bytes of `s` as one copy of its contiguous storage.
    @inlinable
    public mutating func append(utf8 s: String) {
        var s = s
        s.withUTF8 { append(contentsOf: $0) }
    }

    /// The largest `maxCount` whose buffer `appendWriting` keeps on the stack; a larger
    /// one is allocated on the heap (the standard library's limit for temporary allocations).
    public static var appendWritingStackLimit: Int { 1024 }

    /// Appends what `body` writes, at most `maxCount` bytes, assembled in a buffer on the
    /// stack and appended in one copy: each `append` to an array costs a uniqueness and
    /// capacity check, many times the cost of writing a few bytes.
    @inlinable
    public mutating func appendWriting(maxCount: Int, _ body: (inout ByteWriter) -> Void) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: maxCount) { buffer in
            var writer = ByteWriter(buffer)
            body(&writer)
            append(contentsOf: UnsafeBufferPointer(rebasing: buffer[0..<writer.count]))
        }
    }
}

extension Array where Element == UInt8 {
    /// The bytes `body` writes, at most `maxCount`, written straight into the new array's
    /// storage: no bound tighter than the worst case is needed, since nothing is copied.
    public init(writing maxCount: Int, _ body: (inout ByteWriter) -> Void) {
        self.init(unsafeUninitializedCapacity: maxCount) { buffer, count in
            var writer = ByteWriter(buffer)
            body(&writer)
            count = writer.count
        }
    }
}

extension String {
    /// The string `body` writes, at most `maxCount` bytes of UTF-8, assembled in the
    /// string's own storage (interpolating or appending parts costs a growth check and
    /// often a reallocation per part).
    public init(writing maxCount: Int, _ body: (inout ByteWriter) -> Void) {
        self.init(unsafeUninitializedCapacity: maxCount) { buffer in
            var writer = ByteWriter(buffer)
            body(&writer)
            return writer.count
        }
    }
}

/// Writes bytes into a fixed buffer; writing past its end stops the program (callers
/// size the buffer from the lengths they write, see `Array.appendWriting`).
public struct ByteWriter {
    @usableFromInline let buffer: UnsafeMutableBufferPointer<UInt8>
    @usableFromInline var written = 0
    /// Bytes written so far.
    @inlinable public var count: Int { written }

    @inlinable
    public init(_ buffer: UnsafeMutableBufferPointer<UInt8>) {
        self.buffer = buffer
    }

    @inlinable @inline(__always)
    public mutating func put(_ byte: UInt8) {
        precondition(count < buffer.count, "ByteWriter overflow")
        buffer[count] = byte
        written += 1
    }

    @inlinable @inline(__always)
    public mutating func put(_ bytes: UnsafeBufferPointer<UInt8>) {
        precondition(bytes.count <= buffer.count - count, "ByteWriter overflow")
        guard let from = bytes.baseAddress, !bytes.isEmpty else { return }
        (buffer.baseAddress! + count).update(from: from, count: bytes.count)
        written += bytes.count
    }

    @inlinable @inline(__always)
    public mutating func put(literal: StaticString) {
        put(UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    @inlinable
    public mutating func put(utf8 s: String) {
        var s = s
        s.withUTF8 { put($0) }
    }

    @inlinable
    public mutating func put(_ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { put($0) }
    }

    /// The decimal digits of `value`, with `-` when negative (as `String(value)`).
    public mutating func putDecimal(_ value: Int64) {
        if value < 0 { put(45) }
        var v = value.magnitude
        var digits = 1
        var limit: UInt64 = 10
        while digits < 20 && v >= limit {
            digits += 1
            limit = limit &* 10
        }
        precondition(digits <= buffer.count - count, "ByteWriter overflow")
        var i = count + digits
        repeat {
            i -= 1
            buffer[i] = UInt8(truncatingIfNeeded: 48 &+ v % 10)
            v /= 10
        } while v > 0
        written += digits
    }

    /// The most bytes `putJSONString` writes for a string of `utf8Count` bytes: quotes and
    /// every byte escaped as `\u00XX`.
    @inlinable
    public static func jsonStringBound(_ utf8Count: Int) -> Int { 2 + 6 * utf8Count }

    /// The most bytes `putJSONString(s)` writes: exact for a string without escapes (most
    /// are), else as `jsonStringBound(_:)`. A tight bound keeps the buffers of
    /// `Array.appendWriting` small enough for the stack.
    public static func jsonStringBound(_ s: String) -> Int {
        var s = s
        return s.withUTF8 { needsJSONEscape($0) ? jsonStringBound($0.count) : $0.count + 2 }
    }

    /// Whether a byte of `bytes` needs an escape in a JSON string: a control byte, quote or
    /// backslash. Eight bytes are tested at a time (a byte below 0x20, or a zero byte after
    /// XOR with the quote or the backslash, sets its high bit in the sum; exact for "any").
    public static func needsJSONEscape(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress else { return false }
        let ones: UInt64 = 0x0101_0101_0101_0101
        let quotes = ones &* 34, backslashes = ones &* 92, spaces = ones &* 0x20
        func any(_ offset: Int) -> Bool {
            let x = UnsafeRawPointer(base + offset).loadUnaligned(as: UInt64.self)
            let q = x ^ quotes, b = x ^ backslashes
            return (((x &- spaces) & ~x) | ((q &- ones) & ~q) | ((b &- ones) & ~b)) & (ones &* 0x80) != 0
        }
        let n = bytes.count
        guard n >= 8 else {
            for c in bytes where c < 0x20 || c == 34 || c == 92 { return true }
            return false
        }
        var i = 0
        while i + 8 <= n {
            if any(i) { return true }
            i += 8
        }
        // The last 8 bytes again, overlapping the words already tested.
        return i < n && any(n - 8)
    }

    /// `s` as a JSON string literal (RFC 8259 escapes for quote, backslash and controls);
    /// needs room for `jsonStringBound(s)` bytes.
    public mutating func putJSONString(_ s: String) {
        var s = s
        // Most strings (ids, paths, timestamps) need no escape: one scan, then one copy.
        s.withUTF8 { put(jsonUTF8: $0, plain: !Self.needsJSONEscape($0)) }
    }

    /// `putJSONString(s)` when the caller has scanned `s` already: `plain` is whether it
    /// needs no escape, as `jsonStringBound(s) == s.utf8.count + 2` tells.
    public mutating func putJSONString(_ s: String, plain: Bool) {
        var s = s
        s.withUTF8 { bytes in
            assert(plain == !Self.needsJSONEscape(bytes), "plain must say whether the string needs an escape")
            put(jsonUTF8: bytes, plain: plain)
        }
    }

    private mutating func put(jsonUTF8 bytes: UnsafeBufferPointer<UInt8>, plain: Bool) {
        precondition((plain ? bytes.count + 2 : Self.jsonStringBound(bytes.count)) <= buffer.count - count, "ByteWriter overflow")
        let out = buffer.baseAddress!
        var o = count
        out[o] = 34
        o += 1
        if plain {
            if let from = bytes.baseAddress, !bytes.isEmpty { (out + o).update(from: from, count: bytes.count) }
            out[o + bytes.count] = 34
            written = o + bytes.count + 1
            return
        }
        for c in bytes {
            switch c {
            case 34, 92: out[o] = 92; out[o + 1] = c; o += 2
            case 10: out[o] = 92; out[o + 1] = 110; o += 2
            case 13: out[o] = 92; out[o + 1] = 114; o += 2
            case 9: out[o] = 92; out[o + 1] = 116; o += 2
            case 0..<0x20:
                out[o] = 92; out[o + 1] = 117; out[o + 2] = 48; out[o + 3] = 48
                out[o + 4] = Self.hex[Int(c >> 4)]; out[o + 5] = Self.hex[Int(c & 15)]
                o += 6
            default: out[o] = c; o += 1
            }
        }
        out[o] = 34
        written = o + 1
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)
}
