/// JSON shapes of the server contract (API.md), as sent and received. Timestamps stay RFC 3339
/// strings here; the replica converts them to milliseconds.
public enum Wire {
    /// An account as the server shows it.
    public struct Account: Codable, Sendable, Equatable {
        public var id: String
        public var handle: String
        public var displayName: String
        public var createdAt: String?
    }

    /// A device token; `secret` only in the answer that created it.
    public struct Token: Codable, Sendable, Equatable {
        public var id: String
        public var secret: String?
        public var deviceName: String?
        public var createdAt: String?
    }

    /// `POST /v1/accounts` and `GET /v1/me`.
    public struct AccountAndToken: Codable, Sendable, Equatable {
        public var account: Account
        public var token: Token
    }

    /// `{items, nextCursor}` of every list endpoint.
    public struct Page<Item: Codable & Sendable>: Codable, Sendable {
        public var items: [Item]
        public var nextCursor: String?
    }

    /// An RFC 9457 problem document.
    public struct Problem: Codable, Sendable, Equatable {
        public var type: String?
        public var title: String?
        public var status: Int?
        public var detail: String?
        public var code: String?
    }
}
