/// The key every per-address limit counts a client under (failed authentications,
/// registrations, notifications): an IPv4 address, also when it comes IPv4-mapped; the /64
/// network of an IPv6 address — one subscriber's allocation, in which a single client can
/// pick any number of addresses (the connection limit counts the same way); and, for a peer
/// that is not an IP address at all, its text.
enum ClientKey: Hashable, Sendable {
    case ipv4(UInt32)
    case ipv6Network(UInt64)
    case other(String)

    /// The key of a client address as `ClientAddress.resolve` gives it.
    init(_ address: String) {
        guard let bytes = ClientAddress.address(address) else {
            self = .other(address)
            return
        }
        if bytes.count == 4 {
            self = .ipv4(bytes.reduce(0) { $0 << 8 | UInt32($1) })
        } else {
            self = .ipv6Network(bytes[0..<8].reduce(0) { $0 << 8 | UInt64($1) })
        }
    }
}
