/// Content-coding negotiation helpers.
enum ContentCoding {
    /// Whether an `Accept-Encoding` value allows gzip (`gzip`/`x-gzip` or `*` with q > 0,
    /// and gzip not explicitly refused with q=0).
    static func acceptsGzip(_ value: String) -> Bool {
        var gzipQ: Double? = nil
        var starQ: Double? = nil
        for element in value.utf8.split(separator: UInt8(ascii: ",")) {
            let parts = element.split(separator: UInt8(ascii: ";"))
            guard let first = parts.first else { continue }
            let coding = String(decoding: first, as: UTF8.self).trimmedOWS.lowercased()
            var q = 1.0
            for param in parts.dropFirst() {
                let p = String(decoding: param, as: UTF8.self).trimmedOWS.lowercased()
                if p.hasPrefix("q=") { q = Double(p.dropFirst(2)) ?? 0 }
            }
            if coding == "gzip" || coding == "x-gzip" { gzipQ = max(gzipQ ?? 0, q) }
            else if coding == "*" { starQ = q }
        }
        if let gzipQ { return gzipQ > 0 }
        if let starQ { return starQ > 0 }
        return false
    }

    /// Whether a `Content-Type` is worth compressing (text, JSON, YAML, XML, JavaScript, SVG).
    static func isCompressible(_ contentType: String?) -> Bool {
        guard var ct = contentType else { return false }
        // The server's own answers first: one comparison of a short string.
        if ct == "application/json" { return true }
        return ct.withUTF8 { bytes in
            if bytes.startsWithASCIICaseInsensitive(textPrefix) { return true }
            for marker in compressibleMarkers where bytes.containsASCIICaseInsensitive(marker) { return true }
            return false
        }
    }

    private static let textPrefix: [UInt8] = Array("text/".utf8)
    private static let compressibleMarkers: [[UInt8]] = ["json", "yaml", "xml", "javascript", "svg"].map { Array($0.utf8) }
}

extension UnsafeBufferPointer where Element == UInt8 {
    /// ASCII case-insensitive prefix test; `prefix` must be lowercase.
    func startsWithASCIICaseInsensitive(_ prefix: [UInt8]) -> Bool {
        guard count >= prefix.count else { return false }
        for i in 0..<prefix.count where self[i].asciiLowercased != prefix[i] { return false }
        return true
    }

    /// ASCII case-insensitive substring test; `needle` must be lowercase.
    func containsASCIICaseInsensitive(_ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, count >= needle.count else { return needle.isEmpty }
        outer: for start in 0...(count - needle.count) {
            for j in 0..<needle.count where self[start + j].asciiLowercased != needle[j] { continue outer }
            return true
        }
        return false
    }
}

extension UInt8 {
    var asciiLowercased: UInt8 { self >= 65 && self <= 90 ? self + 32 : self }
}

extension String {
    var trimmedOWS: String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return String(s)
    }
}
