extension Wire {
    /// The caller's access as reported by the change feed.
    public struct Access: Codable, Sendable, Equatable {
        public var role: String?
        public var permission: String?
    }

    /// One page of `GET /v1/households/{id}/changes`.
    public struct ChangesPage: Codable, Sendable {
        public var household: Household?
        public var children: [Child]
        public var transactions: [Transaction]
        public var access: Access?
        public var nextToken: String?
        public var moreComing: Bool
        /// Records of the page that do not have the contract's shape, set aside by the merge
        /// (filled by `FeedPageDecoder`; never sent).
        var unreadable: [UnreadableRecord] = []

        enum CodingKeys: String, CodingKey { case household, children, transactions, access, nextToken, moreComing }
    }

    /// A record of a feed page that could not be read, kept as its JSON text.
    struct UnreadableRecord: Sendable, Equatable {
        /// `child` or `transaction`.
        var kind: String
        /// Its id when one could be read, else empty.
        var id: String
        var json: String
        var reason: String
    }

    /// A child record in a push.
    public struct PushChild: Codable, Sendable, Equatable {
        public var id: String
        public var name: String
        public var sortOrder: Int64
        public var archived: Bool
        public var createdAt: String
        public var modifiedAt: String
        public var modifiedBy: String
        public var baseChangeTag: String?
    }

    /// A transaction record in a push.
    public struct PushTransaction: Codable, Sendable, Equatable {
        public var id: String
        public var childId: String
        public var amountCents: Int64
        public var note: String
        public var source: String
        public var createdAt: String
        public var reversesId: String?
    }

    /// Body of `POST /v1/households/{id}/changes` (at most 400 records).
    public struct PushRequest: Codable, Sendable {
        public var children: [PushChild]
        public var transactions: [PushTransaction]
    }

    /// The server's record attached to a push result.
    public enum ServerRecord: Sendable, Equatable {
        case child(Child)
        case transaction(Transaction)
    }

    /// The outcome of one pushed record.
    public struct PushResult: Decodable, Sendable, Equatable {
        public var type: String
        public var id: String
        public var status: String
        public var changeTag: String?
        public var serverRecord: ServerRecord?
        public var code: String?
        /// Why a record was rejected, in words, when the server says.
        public var detail: String?

        enum CodingKeys: String, CodingKey { case type, id, status, changeTag, serverRecord, code, detail }

        public init(type: String, id: String, status: String, changeTag: String? = nil,
                    serverRecord: ServerRecord? = nil, code: String? = nil, detail: String? = nil) {
            self.type = type; self.id = id; self.status = status
            self.changeTag = changeTag; self.serverRecord = serverRecord; self.code = code; self.detail = detail
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            type = try c.decode(String.self, forKey: .type)
            id = try c.decode(String.self, forKey: .id)
            status = try c.decode(String.self, forKey: .status)
            changeTag = try c.decodeIfPresent(String.self, forKey: .changeTag)
            code = try c.decodeIfPresent(String.self, forKey: .code)
            detail = try c.decodeIfPresent(String.self, forKey: .detail)
            if c.contains(.serverRecord), try !c.decodeNil(forKey: .serverRecord) {
                if type == "child" {
                    serverRecord = .child(try c.decode(Child.self, forKey: .serverRecord))
                } else {
                    serverRecord = .transaction(try c.decode(Transaction.self, forKey: .serverRecord))
                }
            } else {
                serverRecord = nil
            }
        }
    }

    /// Body of the push answer.
    public struct PushResponse: Decodable, Sendable {
        public var results: [PushResult]
    }
}
