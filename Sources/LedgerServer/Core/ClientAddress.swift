import Glibc
import HTTPServer

/// The client's address: the peer, or — only when the peer is a trusted proxy — the
/// right-most `X-Forwarded-For` entry that is not itself a trusted proxy. That entry must be
/// an address (a port, and the brackets around IPv6, are dropped); when it is anything else
/// the client is the peer, so a forwarded value can never pick its own limit key.
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

    /// The client's address, in the canonical text of an address when it was forwarded
    /// (`2001:db8::1`, `192.0.2.1` also for `::ffff:192.0.2.1`).
    func resolve(_ request: HTTPRequest) -> String {
        guard !trusted.isEmpty, isTrusted(request.remoteAddress) else { return request.remoteAddress }
        let hops = request.headers.values("X-Forwarded-For")
            .flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
        for hop in hops.reversed() {
            // Not an address: the peer, since whatever stands left of it the client may have written.
            guard let bytes = ClientAddress.forwarded(hop) else { return request.remoteAddress }
            if !isTrusted(bytes) { return ClientAddress.text(bytes) }
        }
        return request.remoteAddress
    }

    func isTrusted(_ address: String) -> Bool {
        guard let bytes = ClientAddress.address(address) else { return false }
        return isTrusted(bytes)
    }

    private func isTrusted(_ bytes: [UInt8]) -> Bool {
        trusted.contains { $0.contains(bytes) }
    }

    /// The bytes of an `X-Forwarded-For` entry: an IPv4 or IPv6 address, IPv4 with a port
    /// (`192.0.2.1:8080`), or IPv6 in brackets with or without a port (`[2001:db8::1]:443`);
    /// nil for anything else.
    static func forwarded(_ hop: String) -> [UInt8]? {
        var host = Substring(hop)
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return nil }
            let rest = host[host.index(after: close)...]
            guard rest.isEmpty || (rest.hasPrefix(":") && isPort(rest.dropFirst())) else { return nil }
            host = host[host.index(after: host.startIndex)..<close]
            // Brackets hold IPv6 only (IPv4-mapped included).
            guard host.contains(":") else { return nil }
        } else if let colon = host.firstIndex(of: ":"), host.lastIndex(of: ":") == colon {
            // One colon: IPv4 and a port (an IPv6 address has at least two).
            guard isPort(host[host.index(after: colon)...]) else { return nil }
            host = host[..<colon]
            guard host.contains(".") else { return nil }
        }
        return address(String(host))
    }

    /// 1 to 5 decimal digits, at most 65535.
    private static func isPort(_ text: Substring) -> Bool {
        (1...5).contains(text.utf8.count) && text.utf8.allSatisfy { $0 >= 48 && $0 <= 57 } && Int(text)! <= 65535
    }

    /// The canonical text of 4 or 16 address bytes (`inet_ntop`).
    static func text(_ bytes: [UInt8]) -> String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        let written = bytes.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &buffer, socklen_t(buffer.count)) }
        guard written != nil else { return "" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
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
        // Only what an address can hold, so no NUL cuts the text short on its way to C.
        guard (2...45).contains(text.utf8.count), text.utf8.allSatisfy(isAddressByte) else { return nil }
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

    /// Hex digits, `.` and `:`.
    private static func isAddressByte(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"), UInt8(ascii: "A")...UInt8(ascii: "F"),
             UInt8(ascii: "."), UInt8(ascii: ":"):
            return true
        default:
            return false
        }
    }
}

extension LedgerAppConfiguration {
    /// The `trustedProxies` entries that are not an address or CIDR network.
    public var invalidTrustedProxies: [String] {
        trustedProxies.filter { ClientAddress.network($0) == nil }
    }
}
