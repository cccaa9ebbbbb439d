import Glibc

/// One parsed HTTP/1.x request, its body complete and already decoded
/// (chunked framing removed, `Content-Encoding: gzip` inflated within the body limit).
public struct HTTPRequest: Sendable {
    /// The method token as sent, e.g. `GET`.
    public var method: String
    /// The request target as sent, e.g. `/v1/households?limit=5`.
    public var target: String
    /// The path part of the target, still percent-encoded, without the query.
    public var path: String
    /// The raw query string after `?` (without it), or nil when absent.
    public var query: String?
    /// HTTP minor version: 0 for HTTP/1.0, 1 for HTTP/1.1.
    public var minorVersion: Int
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// The peer address, e.g. `127.0.0.1` or `::1`.
    public var remoteAddress: String

    public init(method: String, target: String, minorVersion: Int = 1,
                headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = [], remoteAddress: String = "127.0.0.1") {
        self.method = method
        self.target = target
        (self.path, self.query) = HTTPRequest.split(target)
        self.minorVersion = minorVersion
        self.headers = headers
        self.body = body
        self.remoteAddress = remoteAddress
    }

    /// A request whose target was already split into `path` and `query`.
    init(method: String, target: String, path: String, query: String?, minorVersion: Int,
         headers: HTTPHeaders, body: [UInt8], remoteAddress: String) {
        self.method = method
        self.target = target
        self.path = path
        self.query = query
        self.minorVersion = minorVersion
        self.headers = headers
        self.body = body
        self.remoteAddress = remoteAddress
    }

    /// Query parameters, percent-decoded (`+` as space), in order.
    public var queryItems: [(name: String, value: String)] {
        guard let query, !query.isEmpty else { return [] }
        return query.split(separator: "&", omittingEmptySubsequences: true).map { pair in
            if let eq = pair.firstIndex(of: "=") {
                return (PercentDecoding.decode(pair[..<eq], plusAsSpace: true) ?? String(pair[..<eq]),
                        PercentDecoding.decode(pair[pair.index(after: eq)...], plusAsSpace: true) ?? String(pair[pair.index(after: eq)...]))
            }
            return (PercentDecoding.decode(pair, plusAsSpace: true) ?? String(pair), "")
        }
    }

    /// Whether every query parameter name and value percent-decodes to UTF-8 (`queryItems`
    /// would otherwise hand out the raw text). Malformed escapes never get this far: the
    /// parser refuses them in the whole target.
    public var hasDecodableQuery: Bool {
        guard let query, query.utf8.contains(UInt8(ascii: "%")) else { return true }
        return query.split(separator: "&").allSatisfy { pair in
            pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                .allSatisfy { PercentDecoding.decode($0, plusAsSpace: true) != nil }
        }
    }

    /// The first value of query parameter `name`.
    public func queryValue(_ name: String) -> String? {
        queryItems.first { $0.name == name }?.value
    }
}

extension HTTPRequest {
    /// A request target split at its first `?` into path and query. The bytes are scanned
    /// in one contiguous buffer: walking `utf8` indices costs tens of instructions a byte.
    public static func split(_ target: String) -> (path: String, query: String?) {
        var t = target
        // memchr: most targets have no query, and a byte loop over the whole path costs
        // several instructions a byte.
        let found = t.withUTF8 { b -> Int? in
            guard let base = b.baseAddress, let mark = memchr(base, Int32(UInt8(ascii: "?")), b.count) else { return nil }
            return UnsafeRawPointer(mark) - UnsafeRawPointer(base)
        }
        guard let q = found else { return (target, nil) }
        let u = target.utf8
        let mark = u.index(u.startIndex, offsetBy: q)
        return (String(target[..<mark]), String(target[u.index(after: mark)...]))
    }
}

/// Percent-decoding of URL components.
public enum PercentDecoding {
    /// Decodes `%XX` escapes; nil when an escape is malformed or the result is not UTF-8.
    @inlinable
    public static func decode<S: StringProtocol>(_ s: S, plusAsSpace: Bool = false) -> String? {
        // Most path segments and query values carry no escape: no copy through a byte array.
        if !s.utf8.contains(where: { $0 == UInt8(ascii: "%") || (plusAsSpace && $0 == UInt8(ascii: "+")) }) {
            return String(s)
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(s.utf8.count)
        var it = Array(s.utf8)[...]
        while let c = it.popFirst() {
            if c == UInt8(ascii: "%") {
                guard let h = it.popFirst(), let l = it.popFirst(),
                      let hv = hexValue(h), let lv = hexValue(l) else { return nil }
                bytes.append(hv << 4 | lv)
            } else if plusAsSpace && c == UInt8(ascii: "+") {
                bytes.append(UInt8(ascii: " "))
            } else {
                bytes.append(c)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    @usableFromInline
    static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case 48...57: return c - 48
        case 65...70: return c - 55
        case 97...102: return c - 87
        default: return nil
        }
    }
}
