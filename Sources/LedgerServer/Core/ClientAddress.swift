import HTTPServer

/// The client's address: the peer, or — only when the peer is a trusted proxy — the
/// right-most `X-Forwarded-For` entry that is not itself a trusted proxy.
struct ClientAddress: Sendable {
    let trusted: [String]

    func resolve(_ request: HTTPRequest) -> String {
        guard !trusted.isEmpty, isTrusted(request.remoteAddress) else { return request.remoteAddress }
        let hops = request.headers.values("X-Forwarded-For")
            .flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
        for hop in hops.reversed() where !isTrusted(hop) { return hop }
        return request.remoteAddress
    }

    func isTrusted(_ address: String) -> Bool {
        trusted.contains { entry in
            if let slash = entry.firstIndex(of: "/") {
                guard let bits = Int(entry[entry.index(after: slash)...]), let net = ipv4(String(entry[..<slash])),
                      let addr = ipv4(address), (0...32).contains(bits) else { return false }
                let mask: UInt32 = bits == 0 ? 0 : ~UInt32(0) << (32 - UInt32(bits))
                return net & mask == addr & mask
            }
            return entry == address || (address.hasPrefix("::ffff:") && entry == String(address.dropFirst(7)))
        }
    }

    private func ipv4(_ s: String) -> UInt32? {
        let t = s.hasPrefix("::ffff:") ? String(s.dropFirst(7)) : s
        let parts = t.split(separator: ".")
        guard parts.count == 4 else { return nil }
        var v: UInt32 = 0
        for p in parts {
            guard let b = UInt8(p) else { return nil }
            v = v << 8 | UInt32(b)
        }
        return v
    }
}
