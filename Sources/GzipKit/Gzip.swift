import CZlib

/// Errors from gzip encoding and decoding.
public enum GzipError: Error, Equatable, Sendable {
    /// The input is not a valid gzip stream.
    case corrupt
    /// The decompressed size would exceed the caller's limit (bytes).
    case tooLarge(limit: Int)
    /// zlib failed for another reason (its return code).
    case zlib(Int32)
}

/// gzip (RFC 1952) compression and size-capped decompression on top of zlib.
public enum Gzip {
    /// Compresses `input` into a gzip stream. `level` is zlib's 0…9 (default 6).
    public static func compress(_ input: [UInt8], level: Int32 = 6) throws -> [UInt8] {
        var stream = z_stream()
        // windowBits 15 + 16 selects the gzip wrapper.
        var rc = deflateInit2_(&stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY,
                               ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        guard rc == Z_OK else { throw GzipError.zlib(rc) }
        defer { deflateEnd(&stream) }
        let bound = Int(deflateBound(&stream, uLong(input.count)))
        var output = [UInt8](repeating: 0, count: bound)
        rc = input.withUnsafeBufferPointer { inBuf -> Int32 in
            output.withUnsafeMutableBufferPointer { outBuf -> Int32 in
                stream.next_in = UnsafeMutablePointer(mutating: inBuf.baseAddress)
                stream.avail_in = uInt(inBuf.count)
                stream.next_out = outBuf.baseAddress
                stream.avail_out = uInt(outBuf.count)
                return deflate(&stream, Z_FINISH)
            }
        }
        guard rc == Z_STREAM_END else { throw GzipError.zlib(rc) }
        output.removeSubrange(Int(stream.total_out)...)
        return output
    }

    /// Decompresses a gzip stream, refusing to produce more than `limit` bytes.
    /// The limit is enforced while inflating, so a "gzip bomb" costs at most `limit` bytes
    /// of memory. Concatenated gzip members are not accepted; trailing garbage is `corrupt`.
    public static func decompress(_ input: [UInt8], limit: Int) throws -> [UInt8] {
        var stream = z_stream()
        var rc = inflateInit2_(&stream, 15 + 16, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        guard rc == Z_OK else { throw GzipError.zlib(rc) }
        defer { inflateEnd(&stream) }
        if input.isEmpty { throw GzipError.corrupt }
        var output: [UInt8] = []
        output.reserveCapacity(min(limit, max(input.count * 4, 4096)))
        let chunkSize = 64 * 1024
        var chunk = [UInt8](repeating: 0, count: chunkSize)
        try input.withUnsafeBufferPointer { inBuf in
            stream.next_in = UnsafeMutablePointer(mutating: inBuf.baseAddress)
            stream.avail_in = uInt(inBuf.count)
            while true {
                let produced: Int = chunk.withUnsafeMutableBufferPointer { outBuf in
                    stream.next_out = outBuf.baseAddress
                    stream.avail_out = uInt(chunkSize)
                    rc = inflate(&stream, Z_NO_FLUSH)
                    return chunkSize - Int(stream.avail_out)
                }
                if output.count + produced > limit { throw GzipError.tooLarge(limit: limit) }
                output.append(contentsOf: chunk[0..<produced])
                switch rc {
                case Z_STREAM_END:
                    if stream.avail_in != 0 { throw GzipError.corrupt }
                    return
                case Z_OK:
                    continue
                case Z_BUF_ERROR:
                    // No progress possible: the input ended before the stream did.
                    if produced == 0 { throw GzipError.corrupt }
                case Z_DATA_ERROR, Z_NEED_DICT:
                    throw GzipError.corrupt
                default:
                    throw GzipError.zlib(rc)
                }
            }
        }
        return output
    }
}
