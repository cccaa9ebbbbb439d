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
        /// `invalid_id_token`: the check that failed.
        var reason: String?
        /// `owner_of_shared_household`: the households concerned.
        var households: [String]?

        init(type: String? = nil, title: String? = nil, status: Int? = nil, detail: String? = nil, code: String? = nil,
             reason: String? = nil, households: [String]? = nil) {
            self.type = type; self.title = title; self.status = status; self.detail = detail; self.code = code
            self.reason = reason; self.households = households
        }

        /// Reads each member on its own: one of an unexpected type never hides the `code`.
        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            type = try? c.decodeIfPresent(String.self, forKey: .type)
            title = try? c.decodeIfPresent(String.self, forKey: .title)
            status = try? c.decodeIfPresent(Int.self, forKey: .status)
            detail = try? c.decodeIfPresent(String.self, forKey: .detail)
            code = try? c.decodeIfPresent(String.self, forKey: .code)
            reason = try? c.decodeIfPresent(String.self, forKey: .reason)
            households = try? c.decodeIfPresent([String].self, forKey: .households)
        }
    }
}
