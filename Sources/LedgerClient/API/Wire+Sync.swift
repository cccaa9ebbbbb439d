extension Wire {
    /// The caller's access as reported by the change feed.
    struct Access: Codable, Sendable, Equatable {
        var role: String?
        var permission: String?
    }

    /// One page of `GET /v1/households/{id}/changes`.
    struct ChangesPage: Codable, Sendable {
        var household: Household?
        var children: [Child]
        var transactions: [Transaction]
        var access: Access?
        var nextToken: String?
        var moreComing: Bool
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
    struct PushChild: Codable, Sendable, Equatable {
        var id: String
        var name: String
        var sortOrder: Int64
        var archived: Bool
        var createdAt: String
        var modifiedAt: String
        var modifiedBy: String
        var baseChangeTag: String?
    }

    /// A transaction record in a push.
    struct PushTransaction: Codable, Sendable, Equatable {
        var id: String
        var childId: String
        var amountCents: Int64
        var note: String
        var source: String
        var createdAt: String
        var reversesId: String?
        /// Only in an owner's restore, for a record of another member: its author.
        var authorAccountId: String? = nil
    }

    /// Body of `POST /v1/households/{id}/changes` (at most 400 records).
    struct PushRequest: Codable, Sendable {
        var children: [PushChild]
        var transactions: [PushTransaction]
        /// Set while the owner restores the household from this device: records of other
        /// members keep their authors, and the server marks them as restored by the owner.
        var ownerRestore: Bool? = nil
    }

    /// The server's record attached to a push result.
    enum ServerRecord: Sendable, Equatable {
        case child(Child)
        case transaction(Transaction)
    }

    /// The outcome of one pushed record.
    struct PushResult: Decodable, Sendable, Equatable {
        var type: String
        var id: String
        var status: String
        var changeTag: String?
        var serverRecord: ServerRecord?
        var code: String?
        /// Why a record was rejected, in words, when the server says.
        var detail: String?

        enum CodingKeys: String, CodingKey { case type, id, status, changeTag, serverRecord, code, detail }

        init(type: String, id: String, status: String, changeTag: String? = nil,
                    serverRecord: ServerRecord? = nil, code: String? = nil, detail: String? = nil) {
            self.type = type; self.id = id; self.status = status
            self.changeTag = changeTag; self.serverRecord = serverRecord; self.code = code; self.detail = detail
        }

        init(from decoder: any Decoder) throws {
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
    struct PushResponse: Decodable, Sendable {
        var results: [PushResult]
    }
}
