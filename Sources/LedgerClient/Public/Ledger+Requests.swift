import Foundation
import LedgerModel

/// Child devices and requests (CLIENT_API.md "Child devices (v3)"): a parent pairs a device to
/// a child; that device then holds only the child's ledger and makes requests, which parents
/// approve or decline from theirs, online or not.
extension Ledger {
    /// A parent's ledger, or one child's after `redeemChildCode`. Kept in the store: a
    /// reopened store stays in child mode.
    public var mode: LedgerMode {
        (try? service.pairedChild()).flatMap { $0 }.map { .child($0) } ?? .parent
    }

    // MARK: Pairing (a parent's device)

    /// A single-use code that pairs another device to child `childId` (`redeemChildCode` there).
    /// Needs a shared ledger and write access.
    public func pairChildDevice(_ childId: String, deviceName: String? = nil) async throws -> LinkCode {
        let (household, child) = try sharedChild(childId)
        let wire = try await flow { engine in
            try engine.callServer { (api: APIClient) throws(APIError) in
                try api.pairChildDevice(householdId: household, childId: child, deviceName: deviceName)
            }
        }
        guard let expires = Timestamp.parse(wire.expiresAt) else {
            throw LedgerError.server(code: "invalid_answer", status: 0, detail: "The pairing code has no readable expiry.")
        }
        return LinkCode(text: LinkCode.display(wire.code), expiresAt: Date(ms: expires), url: wire.url.flatMap(URL.init(string:)))
    }

    /// The devices paired to child `childId`.
    public func childDevices(of childId: String) async throws -> [ChildDevice] {
        let (household, child) = try sharedChild(childId)
        return try await flow { engine in
            try engine.callServer { (api: APIClient) throws(APIError) in try api.childDevices(householdId: household, childId: child) }
        }.map(ChildDevice.init)
    }

    /// Unpairs a device from child `childId`: its token stops working at once, and the device
    /// reports it like a signed-out one (`.unauthenticated`).
    public func revokeChildDevice(_ tokenId: String, of childId: String) async throws {
        let (household, child) = try sharedChild(childId)
        let token = tokenId.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !token.isEmpty else { throw LedgerError.invalidInput(field: "device", message: "is empty") }
        try await flow { engine in
            try engine.callServer { (api: APIClient) throws(APIError) in
                try api.revokeChildDevice(householdId: household, childId: child, tokenId: token)
            }
        }
    }

    /// The household and stored child id for the parents' device calls.
    private func sharedChild(_ childId: String) throws -> (household: String, child: String) {
        try publicErrors {
            if try service.pairedChild() != nil { throw ClientError.childDevice }
            guard try store.phase() == .shared else {
                throw LedgerError.notAllowed(reason: "Pairing a child's device needs a shared ledger; enable sharing first.")
            }
            return (try store.household().id, try existingChild(childId))
        }
    }

    // MARK: Pairing (the child's device)

    /// Pairs this device to a child with a code made on a parent's device (`pairChildDevice`),
    /// typed in any case with or without its hyphens. Afterwards the ledger is in child mode
    /// (`mode == .child(childId)`), syncs from that child's feed and offers only its calls.
    /// Refused on a device that holds a parent's ledger (a child's device starts empty). A
    /// used, expired or unknown code throws `.linkCodeInvalid`; a parent's link code
    /// `.notAllowed` (it signs in with `redeem(linkCode:)`).
    @discardableResult
    public func redeemChildCode(_ code: String, deviceName: String? = nil) async throws -> LedgerMode {
        let text = code.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { throw LedgerError.linkCodeInvalid }
        try publicErrors {
            guard try service.pairedChild() == nil else { return }
            let counts = try store.counts()
            if try store.phase() != .localOnly || counts.children + counts.transactions > 0 {
                throw LedgerError.notAllowed(reason: "This device holds a parent's ledger. Pair a child's device on a new, empty ledger.")
            }
        }
        let answer = try await onServer(token: .some(nil), retry: .once) { engine in
            try engine.anonymousAPI().redeem(code: text, deviceName: deviceName)
        }
        guard let child = answer.child else {
            throw LedgerError.notAllowed(reason: "That code signs in a parent's device, not a child's.")
        }
        guard let secret = answer.token.secret else {
            throw LedgerError.server(code: "invalid_answer", status: 0, detail: "The server sent no token.")
        }
        let childId = child.childId.lowercased(), householdId = child.householdId.lowercased()
        do {
            try await credentials.setToken(secret)
            try await credentials.setPinnedToken(nil)
        } catch {
            throw LedgerError.store(underlying: error)
        }
        let now = options.clock()
        try publicErrors {
            try store.transaction {
                if try store.string(.childModeChildId) != childId || store.household().id != householdId {
                    // Another child's (or no) ledger: this device starts over from the child's feed.
                    try store.wipeLedger()
                    try store.set(.syncToken, nil)
                }
                var household = try store.household()
                household.id = householdId
                household.role = nil
                household.permission = nil
                household.shared = true
                try store.saveHousehold(household, now: now)
                try store.set(.childModeChildId, childId)
                try store.set(.childModeChildName, child.name)
                try store.set(.tokenId, answer.token.id)
                for key: MetaKey in [.accountId, .accountHandle, .accountDisplayName, .signedInAccountId, .signedInAccountHandle,
                                     .signedInAccountDisplayName, .pinnedTokenId, .reconcile, .reconcileWaiting, .ownerRestore] {
                    try store.set(key, nil)
                }
                try store.setAttention(nil)
                try store.setLastOutcome(nil)
                try store.setPhase(.shared)
                try store.bumpGeneration()
            }
        }
        signedOut = false
        await publish()
        // Offline, the next sync fetches the child's ledger.
        _ = try? await syncNow()
        return .child(childId)
    }

    /// Refuses the calls a device paired to a child does not offer.
    func refuseOnChildDevice() throws {
        if (try? service.pairedChild()) ?? nil != nil { throw LedgerError.notAllowed(reason: LedgerError.childDeviceReason) }
    }

    /// On a child's device, refuses any child but its own.
    func checkChildReadable(_ childId: String) throws {
        if let paired = (try? service.pairedChild()) ?? nil, paired != childId.lowercased() {
            throw LedgerError.notAllowed(reason: LedgerError.childDeviceReason)
        }
    }

    // MARK: Requests

    /// Makes a request: on a child's device for its child (`childId` nil or that child), on a
    /// parent's device for `childId`. Durable here at once; uploaded with the next sync.
    @discardableResult
    public func request(_ draft: RequestDraft, for childId: String? = nil) async throws -> ChildRequest {
        let (kind, cents, note): (RequestRecord.Kind, Int64, String)
        switch draft {
        case .spend(let c, let n): (kind, cents, note) = (.spend, c, n)
        case .chore(let c, let n): (kind, cents, note) = (.chore, c, n)
        }
        let record = try publicErrors {
            let child: String
            if let paired = try service.pairedChild() {
                if let childId, childId.lowercased() != paired { throw ClientError.childDevice }
                child = paired
            } else {
                guard let childId else { throw LedgerError.invalidInput(field: "child", message: "must be given on a parent's device") }
                child = try existingChild(childId)
            }
            return try service.makeRequest(childId: child, kind: kind, cents: cents, note: note)
        }
        await didMutate()
        return try publicErrors { try childRequest(record) }
    }

    /// Requests, newest first: of `childId` (every child's when nil; on a child's device its
    /// own), with `status` when given.
    public func requests(of childId: String? = nil, status: ChildRequest.Status? = nil) async throws -> [ChildRequest] {
        try publicErrors {
            if let childId { try checkChildReadable(childId) }
            let child = try childId?.lowercased() ?? service.pairedChild()
            return try store.requests(childId: child, status: status.flatMap { RequestRecord.Status(rawValue: $0.rawValue) })
                .map(childRequest)
        }
    }

    /// The request with `id`.
    public func request(_ id: String) async throws -> ChildRequest {
        try publicErrors {
            guard let r = try store.request(id: id.lowercased()) else { throw LedgerError.notFound }
            return try childRequest(r)
        }
    }

    /// Approves a pending request (a parent's device with write access), paying `cents` when
    /// given, else the amount asked: a spend request as a withdrawal, a chore as a payment,
    /// with the id `UUIDv5(N, "request:" + requestId)`, so two parents approving pay once.
    /// Works offline. Approving an approved request returns it; a declined one is refused.
    @discardableResult
    public func approve(_ requestId: String, cents: Int64? = nil) async throws -> ChildRequest {
        let record = try publicErrors { try service.decide(requestId: requestId, approve: true, cents: cents) }
        await didMutate()
        return try publicErrors { try childRequest(record) }
    }

    /// Declines a pending request with an optional note for the child. Works offline.
    /// Declining a declined request returns it; an approved one is refused.
    @discardableResult
    public func decline(_ requestId: String, note: String? = nil) async throws -> ChildRequest {
        let record = try publicErrors { try service.decide(requestId: requestId, approve: false, note: note) }
        await didMutate()
        return try publicErrors { try childRequest(record) }
    }

    func childRequest(_ r: RequestRecord) throws -> ChildRequest {
        ChildRequest(id: r.id, childId: r.childId, kind: ChildRequest.Kind(rawValue: r.kind.rawValue) ?? .spend,
                     amountCents: r.amountCents, note: r.note, status: ChildRequest.Status(rawValue: r.status.rawValue) ?? .pending,
                     decidedBy: r.decidedBy, decidedAt: r.decidedAt.map(Date.init(ms:)), decisionNote: r.decisionNote,
                     paymentId: r.paymentId, createdAt: Date(ms: r.createdAt),
                     isPending: try store.pendingVersion(.request, id: r.id) != nil)
    }
}

extension ChildDevice {
    init(_ d: Wire.ChildDevice) {
        self.init(id: d.id, name: d.deviceName ?? d.name, createdAt: d.createdAt.flatMap(Timestamp.parse).map(Date.init(ms:)),
                  lastUsedAt: d.lastUsedAt.flatMap(Timestamp.parse).map(Date.init(ms:)))
    }
}
