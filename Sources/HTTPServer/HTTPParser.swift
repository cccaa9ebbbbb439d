import Glibc

/// An incremental, allocation-light HTTP/1.x request parser.
///
/// The parser is a pure value: it owns no socket and no buffer. The caller keeps the
/// unconsumed input bytes contiguous and passes them to `parse(_:)` again after more
/// data arrived; the parser reports how many bytes it consumed. Request heads are parsed
/// in place once the terminating empty line is present; bodies (`Content-Length` or
/// chunked, with trailers) are accumulated up to `maxBodyBytes`.
///
/// Framing is strict: ambiguous or malformed requests (both `Content-Length` and
/// `Transfer-Encoding`, differing lengths, `Transfer-Encoding` in HTTP/1.0, obs-fold, bare
/// LF, control bytes, a `%` not followed by two hex digits in the target, more than one
/// `Host` or `Authorization` field, …) are refused with `HTTPParserError.badRequest`.
public struct HTTPParser: Sendable {
    /// What one call to `parse(_:)` produced.
    public enum Result: Sendable {
        /// All given bytes were examined; call again with more.
        case needMore
        /// A complete request head. A `.end` follows (possibly after more input).
        case head(HTTPRequestHead)
        /// The body of the current request is complete (empty when it had none).
        case end(body: [UInt8])
        /// The input is refused; the parser stays failed.
        case error(HTTPParserError)
    }

    private enum State: Sendable {
        /// `emptyLines`: blank lines skipped before this request; `scanned`: head bytes
        /// examined so far (without those lines).
        case head(scanned: Int, emptyLines: Int)
        case endPending
        case bodyLength(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailers(size: Int)
        case failed(HTTPParserError)
    }

    /// Largest request head in bytes (request line, fields, final empty line).
    public let maxHeadBytes: Int
    /// Largest request body in bytes (after chunked decoding).
    public let maxBodyBytes: Int
    /// Longest chunk-size line (with extensions) accepted, in bytes.
    public static let maxChunkLineBytes = 1024
    /// Most empty lines (CRLF) accepted before a request line; one more is 400. Default 8.
    public static let maxLeadingEmptyLines = 8

    private var state: State = .head(scanned: 0, emptyLines: 0)
    private var body: [UInt8] = []
    /// The current request's body limit: `maxBodyBytes` unless `limitBody(to:)` lowered it.
    private var bodyLimit: Int

    /// Lowers the body limit of the request whose head was just returned (a route's own
    /// limit); a chunked body that passes it fails with `bodyTooLarge` at once.
    public mutating func limitBody(to limit: Int) { bodyLimit = min(limit, maxBodyBytes) }

    /// Drops the body being received and stops: nothing more is parsed.
    public mutating func abandonBody() {
        body = []
        state = .failed(.bodyTooLarge)
    }

    /// Bytes of memory held for the body being received (its buffer's capacity).
    public var bufferedBodyBytes: Int { body.capacity }

    /// - Parameters:
    ///   - maxHeadBytes: head limit in bytes, default 16 KiB.
    ///   - maxBodyBytes: body limit in bytes, default 4 MiB.
    public init(maxHeadBytes: Int = 16 * 1024, maxBodyBytes: Int = 4 * 1024 * 1024) {
        self.maxHeadBytes = maxHeadBytes
        self.maxBodyBytes = maxBodyBytes
        self.bodyLimit = maxBodyBytes
    }

    /// True while waiting for the first byte of a request (an empty line before the
    /// request line counts as its first byte).
    public var isIdle: Bool {
        if case .head(let scanned, let emptyLines) = state { return scanned == 0 && emptyLines == 0 }
        return false
    }

    /// True while a request head is being received.
    public var isReadingHead: Bool {
        if case .head = state { return true }
        return false
    }

    /// Examines `input` (the unconsumed bytes, starting where the last call's consumed
    /// count ended) and returns how many bytes were consumed plus what was recognised.
    public mutating func parse(_ input: UnsafeBufferPointer<UInt8>) -> (consumed: Int, result: Result) {
        var offset = 0
        while true {
            let rest = UnsafeBufferPointer(rebasing: input[offset...])
            let (n, result) = step(rest)
            offset += n
            if let result { return (offset, result) }
        }
    }

    /// One state transition; nil means "continue with the remaining input".
    private mutating func step(_ input: UnsafeBufferPointer<UInt8>) -> (Int, Result?) {
        switch state {
        case .failed(let error):
            return (0, .error(error))
        case .head(let scanned, let emptyLines):
            return parseHead(input, scanned: scanned, emptyLines: emptyLines)
        case .endPending:
            return (0, finish())
        case .bodyLength(let remaining):
            let n = min(remaining, input.count)
            if n > 0 { body.append(contentsOf: UnsafeBufferPointer(rebasing: input[0..<n])) }
            if n == remaining { return (n, finish()) }
            state = .bodyLength(remaining: remaining - n)
            return (n, .needMore)
        case .chunkSize:
            return parseChunkSize(input)
        case .chunkData(let remaining):
            let n = min(remaining, input.count)
            if n > 0 { body.append(contentsOf: UnsafeBufferPointer(rebasing: input[0..<n])) }
            if n == remaining {
                state = .chunkDataEnd
                return (n, nil)
            }
            state = .chunkData(remaining: remaining - n)
            return (n, .needMore)
        case .chunkDataEnd:
            if input.count < 2 {
                if input.count == 1 && input[0] != 13 { return fail(.badRequest("Missing CRLF after chunk data.")) }
                return (0, .needMore)
            }
            if input[0] != 13 || input[1] != 10 { return fail(.badRequest("Missing CRLF after chunk data.")) }
            state = .chunkSize
            return (2, nil)
        case .trailers(let size):
            return parseTrailer(input, size: size)
        }
    }

    // MARK: - Head

    private mutating func parseHead(_ input: UnsafeBufferPointer<UInt8>, scanned: Int, emptyLines: Int) -> (Int, Result?) {
        let count = input.count
        if scanned == 0 && count > 0 && input[0] == 13 {
            // A few empty lines before a request line are tolerated (RFC 9112 §2.2). A lone
            // CR waits for the next byte, so every split of the input parses alike.
            if count == 1 { return (0, .needMore) }
            if input[1] == 10 {
                if emptyLines >= Self.maxLeadingEmptyLines {
                    return fail(.badRequest("Too many empty lines before the request line."))
                }
                state = .head(scanned: 0, emptyLines: emptyLines + 1)
                return (2, nil)
            }
        }
        var i = scanned
        var end = -1
        // From one LF to the next (memchr), not byte by byte.
        while i < count, let lf = memchr(input.baseAddress! + i, 10, count - i) {
            i = UnsafeRawPointer(lf) - UnsafeRawPointer(input.baseAddress!)
            if i == 0 || input[i - 1] != 13 { return fail(.badRequest("Bare LF line ending.")) }
            if i >= 3, input[i - 2] == 10, input[i - 3] == 13 { end = i + 1; break }
            i += 1
        }
        if end < 0 {
            if count > maxHeadBytes { return fail(.headTooLarge) }
            state = .head(scanned: count, emptyLines: emptyLines)
            return (0, .needMore)
        }
        if end > maxHeadBytes { return fail(.headTooLarge) }
        switch Self.parseHeadBytes(UnsafeBufferPointer(rebasing: input[0..<end]), maxBodyBytes: maxBodyBytes) {
        case .failure(let error):
            return fail(error)
        case .success(let head):
            body = []
            bodyLimit = maxBodyBytes
            switch head.framing {
            case .none, .length(0): state = .endPending
            case .length(let n):
                body.reserveCapacity(min(n, 64 * 1024))
                state = .bodyLength(remaining: n)
            case .chunked: state = .chunkSize
            }
            return (end, .head(head))
        }
    }

    /// Parses a complete head (ending in CRLF CRLF) and checks its framing fields.
    static func parseHeadBytes(_ buf: UnsafeBufferPointer<UInt8>, maxBodyBytes: Int) -> Swift.Result<HTTPRequestHead, HTTPParserError> {
        let count = buf.count
        // Request line: method SP target SP HTTP/1.x CRLF
        var i = 0
        while i < count, isTokenByte(buf[i]) { i += 1 }
        if i == 0 || i >= count || buf[i] != 32 { return .failure(.badRequest("Malformed request line.")) }
        let method = interned(buf, 0, i, Self.commonMethods) ?? makeString(buf, 0, i)
        i += 1
        let targetStart = i
        while i + 8 <= count, allVisible(buf, i) { i += 8 }
        while i < count, buf[i] > 32, buf[i] < 127 { i += 1 }
        if i == targetStart || i >= count || buf[i] != 32 { return .failure(.badRequest("Malformed request target.")) }
        let target = makeString(buf, targetStart, i)
        if !hasValidPercentEscapes(buf, targetStart, i) {
            return .failure(.badRequest("Malformed percent-encoding in the request target."))
        }
        if buf[targetStart] != 47 /* / */ && !(i - targetStart == 1 && buf[targetStart] == 42 /* * */)
            && !hasPrefix(buf, targetStart, i, "http://") && !hasPrefix(buf, targetStart, i, "https://") {
            return .failure(.badRequest("Malformed request target."))
        }
        i += 1
        // "HTTP/1.x" CR LF
        guard i + 10 <= count, buf[i] == 72, buf[i + 1] == 84, buf[i + 2] == 84, buf[i + 3] == 80,
              buf[i + 4] == 47, buf[i + 5] == 49, buf[i + 6] == 46,
              buf[i + 7] == 48 || buf[i + 7] == 49, buf[i + 8] == 13, buf[i + 9] == 10 else {
            return .failure(.badRequest("Unsupported or malformed HTTP version."))
        }
        let minor = Int(buf[i + 7] - 48)
        i += 10

        var headers = HTTPHeaders()
        // Room for the fields of most requests at once, instead of growing 1, 2, 4, 8.
        headers.reserveCapacity(8)
        var contentLength: Int? = nil
        var sawContentLength = false
        var transferEncodingCount = 0
        var chunked = false
        var connectionClose = false
        var connectionKeepAlive = false
        var expectContinue = false
        var hostCount = 0
        var authorizationCount = 0

        while i < count {
            if buf[i] == 13 { break } // the final empty line
            if buf[i] == 32 || buf[i] == 9 { return .failure(.badRequest("Obsolete line folding is not accepted.")) }
            let nameStart = i
            while i < count, isTokenByte(buf[i]) { i += 1 }
            if i == nameStart || i >= count || buf[i] != 58 /* : */ {
                return .failure(.badRequest("Malformed header field name."))
            }
            let nameEnd = i
            i += 1
            while i < count, buf[i] == 32 || buf[i] == 9 { i += 1 }
            let valueStart = i
            while i + 8 <= count, !anyControl(buf, i) { i += 8 }
            while i < count, buf[i] != 13 {
                let c = buf[i]
                if (c < 32 && c != 9) || c == 127 { return .failure(.badRequest("Invalid byte in header field value.")) }
                i += 1
            }
            if i + 1 >= count || buf[i + 1] != 10 { return .failure(.badRequest("Malformed header line.")) }
            var valueEnd = i
            while valueEnd > valueStart, buf[valueEnd - 1] == 32 || buf[valueEnd - 1] == 9 { valueEnd -= 1 }
            i += 2

            let nameLength = nameEnd - nameStart
            let name = interned(buf, nameStart, nameEnd, Self.commonFieldNames) ?? makeString(buf, nameStart, nameEnd)
            let value = makeString(buf, valueStart, valueEnd)
            headers.add(name, value)

            switch nameLength {
            case 14 where equalsLower(buf, nameStart, nameEnd, "content-length"):
                sawContentLength = true
                guard let n = parseContentLength(buf, valueStart, valueEnd) else {
                    return .failure(.badRequest("Invalid Content-Length."))
                }
                if let existing = contentLength, existing != n {
                    return .failure(.badRequest("Conflicting Content-Length values."))
                }
                contentLength = n
            case 17 where equalsLower(buf, nameStart, nameEnd, "transfer-encoding"):
                transferEncodingCount += 1
                if transferEncodingCount > 1 || !equalsLower(buf, valueStart, valueEnd, "chunked") {
                    return .failure(.badRequest("Only Transfer-Encoding: chunked is supported."))
                }
                chunked = true
            case 10 where equalsLower(buf, nameStart, nameEnd, "connection"):
                forEachToken(buf, valueStart, valueEnd) { a, b in
                    if equalsLower(buf, a, b, "close") { connectionClose = true }
                    else if equalsLower(buf, a, b, "keep-alive") { connectionKeepAlive = true }
                }
            case 6 where equalsLower(buf, nameStart, nameEnd, "expect"):
                if equalsLower(buf, valueStart, valueEnd, "100-continue") { expectContinue = true }
            case 4 where equalsLower(buf, nameStart, nameEnd, "host"):
                hostCount += 1
                if hostCount > 1 { return .failure(.badRequest("More than one Host field.")) }
            case 13 where equalsLower(buf, nameStart, nameEnd, "authorization"):
                // RFC 9110 §11.6.2 allows one set of credentials: a second field would
                // leave it to each hop which one counts.
                authorizationCount += 1
                if authorizationCount > 1 { return .failure(.badRequest("More than one Authorization field.")) }
            default:
                break
            }
        }
        // RFC 9112 §3.2: an HTTP/1.1 request must carry exactly one Host field.
        if minor >= 1 && hostCount == 0 { return .failure(.badRequest("Missing Host field.")) }
        // RFC 9112 §6.1: Transfer-Encoding in an HTTP/1.0 message means faulty framing.
        if minor == 0 && transferEncodingCount > 0 {
            return .failure(.badRequest("Transfer-Encoding is not defined for HTTP/1.0."))
        }
        if sawContentLength && chunked {
            return .failure(.badRequest("Both Content-Length and Transfer-Encoding present."))
        }
        let framing: HTTPRequestHead.BodyFraming
        if chunked {
            framing = .chunked
        } else if let n = contentLength {
            if n > maxBodyBytes { return .failure(.bodyTooLarge) }
            framing = n == 0 ? .none : .length(n)
        } else {
            framing = .none
        }
        let keepAlive = connectionClose ? false : (minor >= 1 || connectionKeepAlive)
        // RFC 9110 §10.1.1: a 100-continue expectation from an HTTP/1.0 client is ignored.
        return .success(HTTPRequestHead(method: method, target: target, minorVersion: minor, headers: headers,
                                        framing: framing, keepAlive: keepAlive,
                                        expectContinue: expectContinue && framing != .none && minor >= 1,
                                        headLength: count))
    }

    // MARK: - Chunked bodies

    private mutating func parseChunkSize(_ input: UnsafeBufferPointer<UInt8>) -> (Int, Result?) {
        guard let lineEnd = findLineEnd(input, limit: Self.maxChunkLineBytes) else {
            if input.count > Self.maxChunkLineBytes { return fail(.badRequest("Chunk size line too long.")) }
            return (0, .needMore)
        }
        if lineEnd < 0 { return fail(.badRequest("Bare LF in chunked body.")) }
        // lineEnd is the index of CR.
        var i = 0
        var size = 0
        var digits = 0
        while i < lineEnd, let v = PercentDecoding.hexValue(input[i]) {
            if digits > 0 || v != 0 { digits += 1 }
            if digits > 15 { return fail(.badRequest("Chunk size overflow.")) }
            size = size << 4 | Int(v)
            i += 1
        }
        if i == 0 { return fail(.badRequest("Invalid chunk size.")) }
        // Optional whitespace and chunk extensions.
        while i < lineEnd, input[i] == 32 || input[i] == 9 { i += 1 }
        if i < lineEnd {
            if input[i] != 59 /* ; */ { return fail(.badRequest("Invalid chunk size.")) }
            while i < lineEnd {
                let c = input[i]
                if (c < 32 && c != 9) || c == 127 { return fail(.badRequest("Invalid chunk extension.")) }
                i += 1
            }
        }
        let consumed = lineEnd + 2
        if size == 0 {
            state = .trailers(size: 0)
            return (consumed, nil)
        }
        if size > bodyLimit - body.count { return fail(.bodyTooLarge) }
        if body.capacity < body.count + size { body.reserveCapacity(body.count + min(size, 64 * 1024)) }
        state = .chunkData(remaining: size)
        return (consumed, nil)
    }

    /// One trailer line, or the empty line that ends the message.
    private mutating func parseTrailer(_ input: UnsafeBufferPointer<UInt8>, size: Int) -> (Int, Result?) {
        guard let lineEnd = findLineEnd(input, limit: maxHeadBytes) else {
            if input.count > maxHeadBytes - size { return fail(.headTooLarge) }
            return (0, .needMore)
        }
        if lineEnd < 0 { return fail(.badRequest("Bare LF in trailers.")) }
        if lineEnd == 0 { return (2, finish()) }
        let total = size + lineEnd + 2
        if total > maxHeadBytes { return fail(.headTooLarge) }
        let first = input[0]
        if first == 32 || first == 9 { return fail(.badRequest("Obsolete line folding is not accepted.")) }
        var i = 0
        while i < lineEnd, isTokenByte(input[i]) { i += 1 }
        if i == 0 || i >= lineEnd || input[i] != 58 { return fail(.badRequest("Malformed trailer field.")) }
        i += 1
        while i < lineEnd {
            let c = input[i]
            if (c < 32 && c != 9) || c == 127 { return fail(.badRequest("Invalid byte in trailer field.")) }
            i += 1
        }
        state = .trailers(size: total)
        return (lineEnd + 2, nil)
    }

    // MARK: - Helpers

    private mutating func finish() -> Result {
        state = .head(scanned: 0, emptyLines: 0)
        var done: [UInt8] = []
        swap(&done, &body)
        return .end(body: done)
    }

    private mutating func fail(_ error: HTTPParserError) -> (Int, Result?) {
        state = .failed(error)
        body = []
        return (0, .error(error))
    }

    /// The index of the CR of the first CRLF; -1 for a bare LF; nil when no LF is within
    /// `limit + 2` bytes.
    private func findLineEnd(_ input: UnsafeBufferPointer<UInt8>, limit: Int) -> Int? {
        let n = min(input.count, limit + 2)
        var i = 0
        while i < n {
            if input[i] == 10 { return (i > 0 && input[i - 1] == 13) ? i - 1 : -1 }
            i += 1
        }
        return nil
    }

    @inline(__always)
    static func isTokenByte(_ c: UInt8) -> Bool {
        switch c {
        case 48...57, 65...90, 97...122: return true
        case 33, 35, 36, 37, 38, 39, 42, 43, 45, 46, 94, 95, 96, 124, 126: return true
        default: return false
        }
    }

    private func isTokenByte(_ c: UInt8) -> Bool { Self.isTokenByte(c) }

    /// Whether every `%` in `buf[a..<b]` starts a `%XX` escape (RFC 3986 `pct-encoded`).
    static func hasValidPercentEscapes(_ buf: UnsafeBufferPointer<UInt8>, _ a: Int, _ b: Int) -> Bool {
        var i = a
        // From one "%" to the next (memchr).
        while i < b, let percent = memchr(buf.baseAddress! + i, 37, b - i) {
            i = UnsafeRawPointer(percent) - UnsafeRawPointer(buf.baseAddress!)
            guard i + 2 < b, PercentDecoding.hexValue(buf[i + 1]) != nil,
                  PercentDecoding.hexValue(buf[i + 2]) != nil else { return false }
            i += 3
        }
        return true
    }

    // Eight bytes at a time (one word, any alignment), for the long runs of a head: the
    // byte loops after them decide where a run ends and what is refused. A byte below `n`
    // (n <= 128) sets its high bit in (x - n per byte) & ~x; a byte of 0x7F or more in
    // (x + 1 per byte) | x. Both are exact for "some byte".

    private static let lowBytes: UInt64 = 0x0101_0101_0101_0101
    private static let highBits: UInt64 = 0x8080_8080_8080_8080

    /// Whether the 8 bytes at `buf[i]` are all visible ASCII (0x21…0x7E), as a request target's.
    @inline(__always)
    static func allVisible(_ buf: UnsafeBufferPointer<UInt8>, _ i: Int) -> Bool {
        let x = UnsafeRawPointer(buf.baseAddress! + i).loadUnaligned(as: UInt64.self)
        return (((x &- lowBytes &* 0x21) & ~x) | ((x &+ lowBytes) | x)) & highBits == 0
    }

    /// Whether one of the 8 bytes at `buf[i]` is a control byte (CR and tab included) or DEL.
    @inline(__always)
    static func anyControl(_ buf: UnsafeBufferPointer<UInt8>, _ i: Int) -> Bool {
        let x = UnsafeRawPointer(buf.baseAddress! + i).loadUnaligned(as: UInt64.self)
        let del = x ^ (lowBytes &* 0x7F)
        return (((x &- lowBytes &* 0x20) & ~x) | ((del &- lowBytes) & ~del)) & highBits != 0
    }

    @inline(__always)
    static func makeString(_ buf: UnsafeBufferPointer<UInt8>, _ a: Int, _ b: Int) -> String {
        String(decoding: UnsafeBufferPointer(rebasing: buf[a..<b]), as: UTF8.self)
    }

    /// Methods and field names most requests carry, spelled as clients send them: a match
    /// is handed out as the string literal (nothing to validate, allocate or release).
    static let commonMethods = internable(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"])
    static let commonFieldNames = internable([
        "Host", "Authorization", "Content-Type", "Content-Length", "Accept", "Accept-Encoding", "User-Agent",
        "Connection", "Idempotency-Key", "Content-Encoding", "If-Match", "If-None-Match", "X-Forwarded-For",
        "Expect", "Transfer-Encoding", "host", "authorization", "content-type", "content-length", "accept",
        "accept-encoding", "user-agent", "connection", "idempotency-key", "content-encoding", "if-match",
        "if-none-match", "x-forwarded-for",
    ])

    static func internable(_ strings: [String]) -> [(bytes: [UInt8], string: String)] {
        strings.map { (Array($0.utf8), $0) }
    }

    /// The string among `candidates` with exactly the bytes `buf[a..<b]`.
    static func interned(_ buf: UnsafeBufferPointer<UInt8>, _ a: Int, _ b: Int,
                         _ candidates: [(bytes: [UInt8], string: String)]) -> String? {
        let n = b - a
        for candidate in candidates where candidate.bytes.count == n {
            if candidate.bytes.withUnsafeBufferPointer({ memcmp($0.baseAddress!, buf.baseAddress! + a, n) }) == 0 {
                return candidate.string
            }
        }
        return nil
    }

    /// ASCII case-insensitive comparison of `buf[a..<b]` with a lowercase literal.
    static func equalsLower(_ buf: UnsafeBufferPointer<UInt8>, _ a: Int, _ b: Int, _ lower: StaticString) -> Bool {
        guard b - a == lower.utf8CodeUnitCount else { return false }
        let p = lower.utf8Start
        var i = 0
        while i < b - a {
            var c = buf[a + i]
            if c >= 65 && c <= 90 { c |= 0x20 }
            if c != p[i] { return false }
            i += 1
        }
        return true
    }

    static func hasPrefix(_ buf: UnsafeBufferPointer<UInt8>, _ a: Int, _ b: Int, _ lower: StaticString) -> Bool {
        let n = lower.utf8CodeUnitCount
        return b - a >= n && equalsLower(buf, a, a + n, lower)
    }

    /// Calls `body` with the bounds of each comma-separated, OWS-trimmed, non-empty element.
    static func forEachToken(_ buf: UnsafeBufferPointer<UInt8>, _ a: Int, _ b: Int, _ body: (Int, Int) -> Void) {
        var i = a
        while i < b {
            while i < b, buf[i] == 32 || buf[i] == 9 || buf[i] == 44 { i += 1 }
            let s = i
            while i < b, buf[i] != 44 { i += 1 }
            var e = i
            while e > s, buf[e - 1] == 32 || buf[e - 1] == 9 { e -= 1 }
            if e > s { body(s, e) }
        }
    }

    /// A Content-Length value: digits, or a comma list of identical digit strings.
    /// Saturates at `Int.max` for absurdly large numbers (they fail the body limit).
    static func parseContentLength(_ buf: UnsafeBufferPointer<UInt8>, _ a: Int, _ b: Int) -> Int? {
        var result: Int? = nil
        var ok = true
        var i = a
        while i <= b && ok {
            let s = i
            while i < b, buf[i] != 44 { i += 1 }
            var from = s, to = i
            while from < to, buf[from] == 32 || buf[from] == 9 { from += 1 }
            while to > from, buf[to - 1] == 32 || buf[to - 1] == 9 { to -= 1 }
            if from == to { ok = false; break }
            var n = 0
            for k in from..<to {
                let c = buf[k]
                guard c >= 48 && c <= 57 else { ok = false; break }
                if n == Int.max { continue }
                let (m, o1) = n.multipliedReportingOverflow(by: 10)
                let (r, o2) = m.addingReportingOverflow(Int(c - 48))
                n = (o1 || o2) ? Int.max : r
            }
            if !ok { break }
            if let existing = result, existing != n { ok = false; break }
            result = n
            i += 1
        }
        return ok ? result : nil
    }
}
