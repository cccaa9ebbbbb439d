import Foundation
import LedgerModel

extension Ledger {
    /// What enabling sharing would upload.
    public func sharingPreview() async throws -> SharingPreview {
        try publicErrors {
            let snapshot = try readSnapshot()
            let counts = try store.counts()
            return SharingPreview(household: try snapshot.household ?? HouseholdInfo(store.household()),
                                  children: snapshot.children, childCount: counts.children, transactionCount: counts.transactions)
        }
    }

    /// Uploads this ledger as a household of the signed-in account that others can be invited
    /// to. Resumable: after a failure, calling it again (or any sync) continues where it
    /// stopped, and nothing is uploaded twice.
    public func enableSharing(householdName: String? = nil) async throws {
        try await flow { engine in try ShareFlow(engine: engine).enable(name: householdName) }
    }

    /// Invites the account with `handle`; it joins with `join(_:replacingLocal:)` on its device.
    @discardableResult
    public func invite(handle: String, permission: Permission = .readWrite) async throws -> Participant {
        let wire = try await flow { engine in
            try ShareFlow(engine: engine).invite(handle: handle, readOnly: permission == .readOnly)
        }
        return Participant(wire)
    }

    /// The household's participants (owners see everyone; others see the share as allowed).
    public func participants() async throws -> [Participant] {
        try await flow { engine in try ShareFlow(engine: engine).participants() }.map(Participant.init)
    }

    /// Changes what a participant may do.
    public func setPermission(_ permission: Permission, for accountId: String) async throws {
        let householdId = try ownedSharedHousehold()
        _ = try await flow { engine in
            try engine.callServer { (api: APIClient) throws(APIError) in
                try api.setPermission(householdId: householdId, accountId: accountId.lowercased(), permission: permission)
            }
        }
    }

    /// Revokes a participant's access; their device keeps a frozen copy.
    public func revoke(_ accountId: String) async throws {
        let householdId = try ownedSharedHousehold()
        try await flow { engine in
            try engine.callServer { (api: APIClient) throws(APIError) in try api.removeParticipant(householdId: householdId, accountId: accountId.lowercased()) }
        }
    }

    /// Invitations addressed to the signed-in account.
    public func pendingInvitations() async throws -> [Invitation] {
        try await flow { engine in try JoinFlow(engine: engine).invitations() }.map(Invitation.init)
    }

    /// Joins the household of an invitation. Refused with `.joinWouldReplaceLocalLedger` when
    /// this device holds a different ledger with any record, unless `replacingLocal`, which
    /// first exports that ledger next to the store file.
    /// - Returns: the export of the replaced ledger, when one was written.
    @discardableResult
    public func join(_ invitationId: String, replacingLocal: Bool = false) async throws -> URL? {
        let result = try await flow { engine in
            try JoinFlow(engine: engine).join(invitationId: invitationId, replaceLocal: replacingLocal)
        }
        return result.exportPath.map { URL(fileURLWithPath: $0) }
    }

    /// Declines an invitation.
    public func decline(_ invitationId: String) async throws {
        try await flow { engine in
            try engine.callServer(allowingSwitch: true) { (api: APIClient) throws(APIError) in try api.decline(invitationId: invitationId.lowercased()) }
        }
    }

    /// Leaves the shared household (participants only); this device keeps a local copy as a
    /// ledger of its own.
    public func leave() async throws {
        try await flow { engine in try JoinFlow(engine: engine).leave() }
    }

    /// Stops sharing (owner only): every participant loses access; this device keeps syncing.
    public func stopSharing() async throws {
        try await flow { engine in try ShareFlow(engine: engine).stop() }
    }

    // MARK: Export

    /// Writes the whole ledger to `url` as gzip-compressed JSON (`.json.gz`).
    public func export(to url: URL) async throws {
        try publicErrors { try LedgerExporter(store: store).export(to: url.path, now: Timestamp.nowMs()) }
    }

    /// Restores an export into this ledger, which must be empty and never shared.
    public func importLedger(from url: URL) async throws {
        try publicErrors { _ = try LedgerExporter(store: store).importFile(url.path, now: Timestamp.nowMs()) }
        await didMutate()
    }

    // MARK: Helpers

    /// Runs a sharing or joining step on the push lane; it counts as syncing.
    func flow<T: Sendable>(retry: RetryPolicy? = nil, _ body: @escaping @Sendable (SyncEngine) throws -> T) async throws -> T {
        // None of these (sharing, joining, the account's ways in) is a child device's.
        try refuseOnChildDevice()
        syncing += 1
        defer { syncing -= 1 }
        let before = try? readSyncMarks()
        let value = try await onServer(retry: retry, body)
        if let before, let reason = (try? store.attention()) ?? nil, reason != before.attention {
            emit(.attentionRequired(reason))
        }
        return value
    }

    func ownedSharedHousehold() throws -> String {
        try publicErrors {
            guard try store.phase() == .shared else { throw LedgerError.notAllowed(reason: "This ledger is not shared.") }
            let household = try store.household()
            if let role = household.role, role != .owner {
                throw LedgerError.notAllowed(reason: "Only the household's owner can do that.")
            }
            return household.id
        }
    }
}

extension SyncEngine {
    /// One call to the server with the engine's token and retries; failures are recorded for
    /// the status like a sync's.
    func callServer<T>(allowingSwitch: Bool = false, _ body: (APIClient) throws(APIError) -> T) throws -> T {
        if allowingSwitch { try prepareAllowingSwitch() } else { try prepare() }
        let api = self.api
        do { return try retry.run { () throws(APIError) in try body(api) } } catch { throw try record(error) }
    }
}

extension Participant {
    init(_ p: Wire.Participant) {
        self.init(accountId: p.accountId.lowercased(), handle: p.handle, displayName: p.displayName,
                  permission: Permission(rawValue: p.permission) ?? .readOnly,
                  status: ParticipantStatus(rawValue: p.status) ?? .invited, invitationId: p.invitationId)
    }
}

extension Invitation {
    init(_ i: Wire.Invitation) {
        self.init(id: i.id.lowercased(), householdId: i.householdId.lowercased(), householdName: i.householdName,
                  ownerDisplayName: i.ownerDisplayName, permission: Permission(rawValue: i.permission) ?? .readOnly,
                  invitedAt: i.invitedAt.flatMap(Timestamp.parse).map(Date.init(ms:)))
    }
}
