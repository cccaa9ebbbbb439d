import Glibc
import HTTPServer

/// The client's address: the peer, or — only when the peer is a trusted proxy — the
/// right-most `X-Forwarded-For` entry that is not itself a trusted proxy.
///
/// Trusted proxies are IPv4 or IPv6 addresses or CIDR networks (`10.0.0.0/8`,
/// `fd00::/8`); an IPv4-mapped IPv6 peer (`::ffff:192.0.2.1`) matches its IPv4 form.
struct ClientAddress: Sendable {
    /// An address or network: 4 or 16 bytes and the number of leading bits that count.
    struct Network: Sendable, Equatable {
        let bytes: [UInt8]
        let prefixBits: Int

        func contains(_ address: [UInt8]) -> Bool {
            guard address.count == bytes.count else { return false }
            var bits = prefixBits
            for (a, n) in zip(address, bytes) where bits > 0 {
                let mask: UInt8 = bits >= 8 ? 0xFF : ~(0xFF >> UInt8(bits))
                if a & mask != n & mask { return false }
                bits -= 8
            }
            return true
        }
    }

    let trusted: [Network]

    /// Entries that do not parse are ignored here; the command line refuses them first
    /// (see `LedgerAppConfiguration.invalidTrustedProxies`).
    init(trusted entries: [String]) {
        trusted = entries.compactMap(ClientAddress.network)
    }

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
        guard let bytes = ClientAddress.address(address) else { return false }
        return trusted.contains { $0.contains(bytes) }
    }

    /// `ADDRESS` or `ADDRESS/BITS`; nil when malformed or the prefix is out of range.
    static func network(_ entry: String) -> Network? {
        let parts = entry.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let bytes = address(String(parts[0])) else { return nil }
        let maxBits = bytes.count * 8
        guard parts.count == 2 else { return Network(bytes: bytes, prefixBits: maxBits) }
        guard parts[1].utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let bits = Int(parts[1]) else { return nil }
        // An IPv4-mapped network (::ffff:10.0.0.0/104) is kept in its IPv4 form.
        let mappedBits = parts[0].contains(".") && parts[0].contains(":") ? bits - 96 : bits
        guard (0...maxBits).contains(mappedBits) else { return nil }
        return Network(bytes: bytes, prefixBits: mappedBits)
    }

    /// The 4 (IPv4, also for IPv4-mapped IPv6) or 16 bytes of a textual address.
    static func address(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
            return Array(bytes[12...])
        }
        return bytes
    }
}

extension LedgerAppConfiguration {
    /// The `trustedProxies` entries that are not an address or CIDR network.
    public var invalidTrustedProxies: [String] {
        trustedProxies.filter { ClientAddress.network($0) == nil }
    }
}
