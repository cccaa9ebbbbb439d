import Glibc
import SystemKit

/// Serves files below a root directory, safely.
///
/// Only GET and HEAD are answered. A request path is percent-decoded once and split into
/// segments; `..`, NUL, backslashes and paths that resolve (through symlinks) outside the
/// root give nil, as does a missing file or a directory. `/` and paths ending in `/` map
/// to `index.html`. Responses carry a content type by extension, a strong `ETag` (a hash of
/// the content) and `Cache-Control: no-cache`; a matching `If-None-Match` gives 304.
public struct StaticFiles: Sendable {
    /// The root directory as given, e.g. `Public`.
    public let root: String
    private let resolvedRoot: String?
    /// Largest file served, in bytes (default 16 MiB); larger files give nil.
    public var maxFileBytes = 16 * 1024 * 1024

    /// - Parameter root: the directory to serve, relative to the working directory or absolute.
    public init(root: String) {
        self.root = root
        self.resolvedRoot = resolvedPath(root)
    }

    /// The response for `request`, or nil when it does not name a servable file
    /// (the caller answers 404).
    public func response(for request: HTTPRequest) -> HTTPResponse? {
        guard request.method == "GET" || request.method == "HEAD", let base = resolvedRoot else { return nil }
        guard request.path.hasPrefix("/"), let decoded = PercentDecoding.decode(request.path) else { return nil }
        if decoded.utf8.contains(0) || decoded.contains("\\") { return nil }
        var segments: [Substring] = []
        for segment in decoded.split(separator: "/", omittingEmptySubsequences: true) {
            if segment == ".." || segment == "." { return nil }
            segments.append(segment)
        }
        if decoded.hasSuffix("/") { segments.append("index.html") }
        guard !segments.isEmpty else { return nil }
        let candidate = base + "/" + segments.joined(separator: "/")
        guard let real = resolvedPath(candidate), real.hasPrefix(base + "/") else { return nil }
        guard let content = readRegularFile(real) else { return nil }

        let tag = "\"" + Self.fnv1a64(content) + "\""
        var headers = HTTPHeaders()
        headers.set("ETag", tag)
        headers.set("Cache-Control", "no-cache")
        if let inm = request.headers["If-None-Match"], Self.matches(inm, tag) {
            return HTTPResponse(status: 304, headers: headers)
        }
        headers.set("Content-Type", MIMEType.forPath(real))
        return HTTPResponse(status: 200, headers: headers, body: content)
    }

    static func matches(_ ifNoneMatch: String, _ tag: String) -> Bool {
        for element in ifNoneMatch.split(separator: ",") {
            var t = Substring(element.trimmingCharacters(" \t"))
            if t == "*" { return true }
            if t.hasPrefix("W/") { t = t.dropFirst(2) }
            if t == tag { return true }
        }
        return false
    }

    private func readRegularFile(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, Int(st.st_size) <= maxFileBytes else { return nil }
        var out = [UInt8](repeating: 0, count: Int(st.st_size))
        var filled = 0
        while filled < out.count {
            let n = out.withUnsafeMutableBytes { read(fd, $0.baseAddress! + filled, $0.count - filled) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            filled += n
        }
        if filled < out.count { out.removeSubrange(filled...) }
        return out
    }

    private static func fnv1a64(_ bytes: [UInt8]) -> String {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes {
            h ^= UInt64(b)
            h = h &* 0x0000_0100_0000_01b3
        }
        let hex = String(h, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex + "-" + String(bytes.count, radix: 16)
    }
}

extension Substring {
    fileprivate func trimmingCharacters(_ set: String) -> Substring {
        var s = self
        while let f = s.first, set.contains(f) { s = s.dropFirst() }
        while let l = s.last, set.contains(l) { s = s.dropLast() }
        return s
    }
}
