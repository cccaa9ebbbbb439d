/// JSON shapes of the server contract (API.md), as sent and received. Timestamps stay RFC 3339
/// strings here; the replica converts them to milliseconds.
enum Wire {
    /// An account as the server shows it.
    struct Account: Codable, Sendable, Equatable {
        var id: String
        var handle: String
        var displayName: String
        var createdAt: String?
    }

    /// A device token; `secret` only in the answer that created it.
    struct Token: Codable, Sendable, Equatable {
        var id: String
        var secret: String?
        var deviceName: String?
        var createdAt: String?
    }

    /// `POST /v1/accounts` and `GET /v1/me`.
    struct AccountAndToken: Codable, Sendable, Equatable {
        var account: Account
        var token: Token
    }

    /// `{items, nextCursor}` of every list endpoint.
    struct Page<Item: Codable & Sendable>: Codable, Sendable {
        var items: [Item]
        var nextCursor: String?
    }

    /// An RFC 9457 problem document.
    struct Problem: Codable, Sendable, Equatable {
        var type: String?
        var title: String?
        var status: Int?
        var detail: String?
        var code: String?
    }
}
