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
        var schedules: [Schedule] = []
        var pots: [Pot] = []
        /// Children's requests (API.md "Child devices and requests").
        var requests: [Request] = []
        var access: Access?
        var nextToken: String?
        var moreComing: Bool
        /// Records of the page that do not have the contract's shape, set aside by the merge
        /// (filled by `FeedPageDecoder`; never sent).
        var unreadable: [UnreadableRecord] = []

        enum CodingKeys: String, CodingKey { case household, children, transactions, schedules, pots, requests, access, nextToken, moreComing }
    }

    /// A record of a feed page that could not be read, kept as its JSON text.
    struct UnreadableRecord: Sendable, Equatable {
        /// `child`, `transaction`, `schedule`, `pot` or `request`.
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
        /// Left out for the child's default pot, so servers before pots accept the record.
        var potId: String? = nil
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

        var schedules: [Schedule] = []
        var pots: [Pot] = []
        /// Requests made or decided on this device (a decision's payment is the server's to
        /// write: it is never sent with it).
        var requests: [Request] = []

        enum CodingKeys: String, CodingKey { case children, pots, schedules, requests, transactions, ownerRestore }

        /// Schedules and pots only when there are some, so servers before them accept the batch.
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(children, forKey: .children)
            if !pots.isEmpty { try c.encode(pots, forKey: .pots) }
            if !schedules.isEmpty { try c.encode(schedules, forKey: .schedules) }
            if !requests.isEmpty { try c.encode(requests, forKey: .requests) }
            try c.encode(transactions, forKey: .transactions)
            try c.encodeIfPresent(ownerRestore, forKey: .ownerRestore)
        }

        init(children: [PushChild], transactions: [PushTransaction], schedules: [Schedule] = [], pots: [Pot] = [],
             ownerRestore: Bool? = nil) {
            self.children = children; self.transactions = transactions; self.schedules = schedules; self.pots = pots
            self.ownerRestore = ownerRestore
        }

        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            children = try c.decodeIfPresent([PushChild].self, forKey: .children) ?? []
            transactions = try c.decodeIfPresent([PushTransaction].self, forKey: .transactions) ?? []
            schedules = try c.decodeIfPresent([Schedule].self, forKey: .schedules) ?? []
            pots = try c.decodeIfPresent([Pot].self, forKey: .pots) ?? []
            requests = try c.decodeIfPresent([Request].self, forKey: .requests) ?? []
            ownerRestore = try c.decodeIfPresent(Bool.self, forKey: .ownerRestore)
        }

        var isEmpty: Bool { children.isEmpty && transactions.isEmpty && schedules.isEmpty && pots.isEmpty && requests.isEmpty }
    }

    /// The server's record attached to a push result.
    enum ServerRecord: Sendable, Equatable {
        case child(Child)
        case transaction(Transaction)
        case schedule(Schedule)
        case pot(Pot)
        case request(Request)
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
                } else if type == "schedule" {
                    serverRecord = .schedule(try c.decode(Schedule.self, forKey: .serverRecord))
                } else if type == "pot" {
                    serverRecord = .pot(try c.decode(Pot.self, forKey: .serverRecord))
                } else if type == "request" {
                    serverRecord = .request(try c.decode(Request.self, forKey: .serverRecord))

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
