import Foundation
import LedgerModel

extension Ledger {
    /// The households the signed-in account owns or has joined, as the server lists them. This
    /// device holds one of them at a time; `open(household:replacingLocal:)` brings another here.
    public func households() async throws -> [HouseholdSummary] {
        try await ensureAccountKnown()
        return try await flow { engine in try JoinFlow(engine: engine).households() }.map(HouseholdSummary.init)
    }

    /// Brings one of the account's households to this device — a second device, a replaced
    /// phone, a recovered or linked one — and from then on syncs it like any other device.
    /// The first fetch is staged like a join's: an interruption (network, kill) resumes with
    /// the next call or sync, and the household arrives complete or not at all. Refused with
    /// `.joinWouldReplaceLocalLedger` when this device holds a different ledger with any record,
    /// unless `replacingLocal`, which first exports that ledger next to the store file. Opening
    /// the household this device already syncs changes nothing. `.notFound` when the account
    /// does not own or take part in it.
    /// - Returns: the export of the replaced ledger, when one was written.
    @discardableResult
    public func open(household id: HouseholdID, replacingLocal: Bool = false) async throws -> URL? {
        try await ensureAccountKnown()
        let result = try await flow { engine in
            try JoinFlow(engine: engine).open(householdId: id, replaceLocal: replacingLocal)
        }
        return result.exportPath.map { URL(fileURLWithPath: $0) }
    }

    /// Hands this shared household to `accountId`, an accepted read-write participant; the
    /// owner stays in it as a read-write participant. Owner only.
    public func transferOwnership(to accountId: String) async throws {
        _ = try ownedSharedHousehold()
        _ = try await flow { engine in try AccountFlow(engine: engine).transferOwnership(to: accountId) }
    }

    /// A token without an account in this store (one kept in iCloud Keychain by the person's
    /// other device): the server says whose it is before the account's households are used.
    func ensureAccountKnown() async throws {
        guard meta(.accountId) == nil, let token = await currentToken() else { return }
        try await signIn(token: token)
    }

    /// After a sign-in with an identity, a link code or a recovery code: lists the account's
    /// households and opens the only one, when there is exactly one and opening it replaces
    /// nothing. Failing to list or open is not the sign-in's failure.
    func afterSignIn(_ account: Wire.Account, created: Bool) async -> SignInOutcome {
        var outcome = SignInOutcome(account: Account(account), created: created, households: nil, openedHousehold: nil)
        guard let list = try? await households() else { return outcome }
        outcome.households = list
        guard list.count == 1, meta(.signedInAccountId) == nil else { return outcome }
        _ = try? await open(household: list[0].id, replacingLocal: false)
        if (try? store.phase()) == .shared, (try? store.household().id) == list[0].id, (try? store.attention()) ?? nil == nil {
            outcome.openedHousehold = list[0]
        }
        return outcome
    }
}

extension HouseholdSummary {
    init(_ h: Wire.Household) {
        self.init(id: h.id.lowercased(), name: h.name, currency: h.currency ?? "USD",
                  role: h.role.flatMap(Role.init(rawValue:)) ?? .participant,
                  permission: h.permission.flatMap(Permission.init(rawValue:)) ?? .readOnly,
                  shared: h.shared ?? false, ownerAccountId: h.ownerAccountId?.lowercased())
    }
}

extension Account {
    init(_ a: Wire.Account) {
        self.init(id: a.id.lowercased(), handle: a.handle, displayName: a.displayName)
    }
}
