import Foundation
import LedgerClient
import LedgerModel

extension CLI {
    // MARK: The account's households

    func households(_ rest: [String]) async throws {
        try args.expectPositionals(1)
        let ledger = try await ledgerWithServer()
        let all = try await ledger.households()
        let here = try await currentHouseholdId(ledger)
        if json { emit(.array(all.map { Output.householdSummary($0, onThisDevice: $0.id == here) })); return }
        if all.isEmpty { print("this account has no households yet; share this ledger with `kidledger share enable`") }
        for h in all {
            print("\(h.id)\t\(h.name)\t\(h.role.rawValue)\t\(h.permission.rawValue)\(h.id == here ? "\t(on this device)" : "")")
        }
    }

    func use(_ rest: [String]) async throws {
        try args.expectPositionals(2)
        let key = try args.positional(1, "ID").trimmingCharacters(in: .whitespacesAndNewlines)
        let ledger = try await ledgerWithServer()
        let all = try await ledger.households()
        let byName = all.filter { $0.name.lowercased() == key.lowercased() }
        guard let target = all.first(where: { $0.id == key.lowercased() }) ?? (byName.count == 1 ? byName[0] : nil) else {
            if byName.count > 1 { throw CLIError("more than one household is named '\(key)'; use its id (`kidledger households`)") }
            throw CLIError("no household '\(key)' among this account's; run `kidledger households` to list them")
        }
        try await bringHere(ledger, anyway: "open '\(target.name)' anyway",
                            notFound: "no household '\(key)' among this account's; run `kidledger households` to list them",
                            bring: { try await ledger.open(household: target.id, replacingLocal: $0) },
                            report: { name, counts in "opened '\(name ?? target.name)' (\(counts)); this device now syncs it" })
    }

    /// The household this device syncs, if any (a ledger never shared syncs none).
    func currentHouseholdId(_ ledger: Ledger) async throws -> String? {
        guard await ledger.status() != .localOnly, let household = try await ledger.snapshot().household,
              household.role != nil else { return nil }
        return household.id
    }

    /// After a sign-in on a ledger that is local only: the account's households on the server,
    /// and how to open one. Best effort, quick.
    func householdHint(_ ledger: Ledger) async -> String? {
        guard await ledger.status() == .localOnly,
              let all = try? await withDeadline(seconds: 3, { try await ledger.households() }), !all.isEmpty else { return nil }
        if all.count == 1 {
            return "this account has the household '\(all[0].name)' on the server; open it here with `kidledger use \(all[0].id)`"
        }
        return "this account has \(all.count) households on the server; list them with `kidledger households` and open one with `kidledger use ID`"
    }

    // MARK: Signing in with an identity, a link code, a recovery code

    func signInOIDC() async throws {
        try args.expectPositionals(1)
        let usage = "usage: kidledger signin-oidc --provider P --id-token T [--nonce N] [--handle H --name N] [--device-name D]"
        guard let provider = args.option("--provider"), let idToken = args.option("--id-token") else {
            throw Arguments.UsageError(description: usage)
        }
        let handle = args.option("--handle"), name = args.option("--name")
        guard (handle == nil) == (name == nil) else { throw Arguments.UsageError(description: "--handle and --name go together; \(usage)") }
        let ledger = try await ledgerWithServer()
        let outcome = try await ledger.signIn(provider: provider, idToken: idToken, nonce: args.option("--nonce"),
                                              newAccount: handle.map { NewAccount(handle: $0, displayName: name ?? $0) },
                                              deviceName: deviceName)
        await report(outcome, ledger)
    }

    func redeem(_ rest: [String]) async throws {
        try args.expectPositionals(2)
        let code = try args.positional(1, "CODE")
        let ledger = try await ledgerWithServer()
        await report(try await ledger.redeem(linkCode: code, deviceName: deviceName), ledger)
    }

    func recover(_ rest: [String]) async throws {
        try args.expectPositionals(1)
        guard let handle = args.option("--handle"), let code = args.option("--code") else {
            throw Arguments.UsageError(description: "usage: kidledger recover --handle H --code C [--revoke-others] [--device-name D]")
        }
        let ledger = try await ledgerWithServer()
        let outcome = try await ledger.recover(handle: handle, code: code, revokeOtherDevices: args.flag("--revoke-others"),
                                               deviceName: deviceName)
        if args.flag("--revoke-others"), !json { print("every other device of @\(outcome.account.handle) was signed out") }
        await report(outcome, ledger)
    }

    private var deviceName: String { args.option("--device-name") ?? ProcessInfo.processInfo.hostName }

    /// Who is signed in, whether the account is new, and which household this device now holds
    /// (or how to open one).
    private func report(_ outcome: SignInOutcome, _ ledger: Ledger) async {
        let switched = await ledger.ledgerAccountWhileSwitched
        if json {
            emit(.object(["accountId": .string(outcome.account.id), "handle": .string(outcome.account.handle),
                          "created": .bool(outcome.created), "accountChanged": .bool(switched != nil),
                          "households": outcome.households.map { .array($0.map { Output.householdSummary($0, onThisDevice: $0.id == outcome.openedHousehold?.id) }) } ?? .null,
                          "openedHouseholdId": outcome.openedHousehold.map { .string($0.id) } ?? .null]))
            return
        }
        print("signed in as @\(outcome.account.handle)\(outcome.created ? " (new account)" : "")")
        if switched != nil {
            print("this ledger belongs to another account; shared editing is frozen until you go back with `kidledger login --pinned` or open one of this account's households with `kidledger use ID --replace-local`")
            return
        }
        if let opened = outcome.openedHousehold {
            let snapshot = try? await ledger.snapshot()
            print("opened '\(opened.name)' (\(Output.count(snapshot?.children.count ?? 0, "child", "children"))); this device now syncs it")
            return
        }
        guard let all = outcome.households else {
            print("the account's households could not be listed now; run `kidledger households` later")
            return
        }
        let here = try? await currentHouseholdId(ledger)
        if all.count == 1, all[0].id != here {
            print("this device holds a different ledger, so '\(all[0].name)' was not opened; run `kidledger use \(all[0].id) --replace-local` to export this one and open it")
        } else if all.count > 1 {
            print("this account has \(all.count) households; list them with `kidledger households` and open one with `kidledger use ID`")
        }
    }

    // MARK: The account's ways in

    func link(_ rest: [String]) async throws {
        try args.expectPositionals(1)
        let code = try await ledgerWithServer().createLinkCode()
        if json {
            emit(.object(["code": .string(code.text), "expiresAt": .string(Output.ms(code.expiresAt)),
                          "url": code.url.map { .string($0.absoluteString) } ?? .null]))
            return
        }
        print("link code: \(code.text) (single use, valid until \(Output.ms(code.expiresAt)))")
        if let url = code.url { print("as a URL for a QR code: \(url.absoluteString)") }
        print("on the new device: kidledger redeem \(code.text)")
    }

    func recoveryCodes(_ rest: [String]) async throws {
        try args.expectPositionals(1)
        let codes = try await ledgerWithServer().generateRecoveryCodes()
        if json { emit(.object(["codes": .array(codes.map { .string($0) })])); return }
        print("recovery codes (each works once; any earlier codes no longer work; they are not shown again, so keep them safe):")
        for code in codes { print(code) }
        print("on a new device: kidledger recover --handle HANDLE --code CODE")
    }

    // MARK: Ownership and deletion

    func owner(_ rest: [String]) async throws {
        try args.expectPositionals(3)
        guard rest.first == "transfer" else { throw Arguments.UsageError(description: "usage: kidledger owner transfer HANDLE") }
        let handle = try args.positional(2, "HANDLE").trimmingCharacters(in: .whitespacesAndNewlines)
        let bare = handle.hasPrefix("@") ? String(handle.dropFirst()) : handle
        let ledger = try await ledgerWithServer()
        guard let p = try await ledger.participants().first(where: { $0.handle?.lowercased() == bare.lowercased() }) else {
            throw CLIError("@\(bare) is not a participant of this household; invite them with `kidledger share invite \(bare)` first")
        }
        guard p.status == .accepted, p.permission == .readWrite else {
            throw CLIError("@\(bare) must have joined with read-write access to become the owner (now \(p.status.rawValue), \(p.permission.rawValue))")
        }
        try await ledger.transferOwnership(to: p.accountId)
        let household = try await ledger.snapshot().household
        if json { emit(Output.household(household)); return }
        print("@\(bare) now owns '\(household?.name ?? "")'; you stay in it with read-write access")
    }

    func account(_ rest: [String]) async throws {
        try args.expectPositionals(2)
        guard rest.first == "delete" else {
            throw Arguments.UsageError(description: "usage: kidledger account delete --confirm HANDLE [--delete-shared] [--out FILE]")
        }
        guard let confirm = args.option("--confirm") else {
            throw Arguments.UsageError(description: "usage: kidledger account delete --confirm HANDLE [--delete-shared] [--out FILE]")
        }
        let ledger = try await ledgerWithServer()
        guard let account = await ledger.account else { throw LedgerError.unauthenticated }
        let bare = confirm.hasPrefix("@") ? String(confirm.dropFirst()) : confirm
        if !account.handle.isEmpty, bare.lowercased() != account.handle.lowercased() {
            throw CLIError("--confirm must be the signed-in account's handle (@\(account.handle)); nothing was deleted")
        }
        // An export first, so the ledger can be imported again whatever happens next.
        let preview = try await ledger.sharingPreview()
        var export: URL?
        if preview.childCount + preview.transactionCount > 0 {
            export = URL(fileURLWithPath: args.option("--out") ?? "\(storePath)-export-\(Timestamp.nowMs()).json.gz")
        }
        let deletion = try await ledger.deleteAccount(confirmHandle: bare, deletingSharedHouseholds: args.flag("--delete-shared"),
                                                      exportingTo: export)
        let now = await ledger.account
        if json {
            emit(.object(["deleted": .string(account.handle), "exportPath": deletion.exportedTo.map { .string($0.path) } ?? .null,
                          "signedInAs": now.map { .string($0.handle) } ?? .null, "notice": .string(deletion.subscriptionNotice)]))
            return
        }
        if let path = deletion.exportedTo?.path { print("exported this ledger to \(path) first") }
        print("deleted the account @\(account.handle); every device of it is signed out")
        if let now {
            print("this device is back to @\(now.handle), this ledger's account")
        } else {
            print("this device keeps its ledger as a local-only ledger")
        }
        print(deletion.subscriptionNotice)
    }
}
