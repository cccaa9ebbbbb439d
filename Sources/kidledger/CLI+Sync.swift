import Foundation
import LedgerClient
import LedgerModel
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension CLI {
    func signup() async throws {
        try args.expectPositionals(1)
        guard let handle = args.option("--handle"), let name = args.option("--name") else {
            throw Arguments.UsageError(description: "usage: kidledger signup --handle H --name N [--device-name D]")
        }
        let ledger = try await ledgerWithServer()
        let device = args.option("--device-name") ?? ProcessInfo.processInfo.hostName
        try await ledger.signUp(handle: handle, displayName: name, deviceName: device)
        await reportSignIn(ledger)
    }

    func login() async throws {
        try args.expectPositionals(1)
        if args.flag("--pinned") {
            let ledger = try await ledger()
            do { try await ledger.signInToLedgerAccount() } catch LedgerError.notAllowed {
                throw CLIError("login --pinned needs a ledger signed in as another account than its own")
            }
            await reportSignIn(ledger)
            return
        }
        guard let token = args.option("--token") else { throw Arguments.UsageError(description: "usage: kidledger login --token T | --pinned") }
        let ledger = try await ledgerWithServer()
        try await ledger.signIn(token: token)
        await reportSignIn(ledger)
        if !json, await ledger.ledgerAccountWhileSwitched == nil, let hint = await householdHint(ledger) { print(hint) }
    }

    private func reportSignIn(_ ledger: Ledger) async {
        let account = await ledger.account
        if let pinned = await ledger.ledgerAccountWhileSwitched {
            if json {
                emit(.object(["accountId": .string(account?.id ?? ""), "pinnedAccountId": .string(pinned.id), "accountChanged": .bool(true)]))
            } else {
                print("signed in as another account than this ledger's; shared editing is frozen until you go back with `kidledger login --pinned` or join with --replace-local")
            }
        } else if json {
            emit(.object(["accountId": .string(account?.id ?? ""), "handle": .string(account?.handle ?? ""), "accountChanged": .bool(false)]))
        } else {
            print("signed in as @\(account?.handle ?? "")")
        }
    }

    func status(_ rest: [String]) async throws {
        try args.expectPositionals(1)
        let ledger = try await ledger()
        var status = await ledger.status()
        // A stored "offline" may be old news: check the server quickly before saying so.
        if case .offline = status, await ledger.server != nil {
            _ = try? await withDeadline(seconds: 3) { try await ledger.syncNow() }
            status = await ledger.status()
        }
        if json { emit(Output.status(status)); return }
        let snapshot = try await ledger.snapshot()
        print(Output.describe(status))
        if case .child(let childId) = snapshot.mode {
            let child = snapshot.children.first { $0.id == childId }
            print("this device is \(child?.name ?? "a child")'s: balance \(child.map { Cents.format($0.balanceCents) } ?? "not synced yet")")
            if snapshot.pendingRequests > 0 { print("\(Output.count(snapshot.pendingRequests, "request waits", "requests wait")) for a parent") }
        } else if let household = snapshot.household {
            if snapshot.pendingRequests > 0 {
                print("\(Output.count(snapshot.pendingRequests, "request waits", "requests wait")) for a decision; run `kidledger requests`")
            }
            switch (status, household.role) {
            case (.localOnly, _): print("ledger: \(household.name), local only")
            case (_, nil): print("ledger: \(household.name), sharing or joining under way; run `kidledger sync` to finish")
            case (_, let role?): print("ledger: \(household.name) (\(role.rawValue), \(household.permission?.rawValue ?? "readWrite"))")
            }
        }
        if let pinned = await ledger.ledgerAccountWhileSwitched {
            print("account: @\(pinned.handle) (this ledger's); signed in as @\(await ledger.account?.handle ?? "?")")
        } else if let account = await ledger.account {
            print("account: @\(account.handle)")
        }
        if !snapshot.rejected.isEmpty { print("\(snapshot.rejected.count) records were refused by the server and kept aside") }
    }

    /// `kidledger restore-server`: the owner's restore from this device after the server went
    /// back in time; pushes what it lacks, other members' records in their names.
    func restoreServer(_ rest: [String]) async throws {
        try args.expectPositionals(1)
        let ledger = try await ledgerWithServer()
        let report = try await ledger.restoreServerFromThisDevice()
        printReport(report, await ledger.status())
    }

    func sync(_ rest: [String]) async throws {
        try args.expectPositionals(1)
        let ledger = try await ledgerWithServer()
        if await ledger.status() == .localOnly, await ledger.account != nil {
            if json { printReport(SyncReport(), .localOnly) } else if let hint = await householdHint(ledger) {
                print("this ledger is local only: nothing to sync; \(hint)")
            } else {
                print("this ledger is local only: nothing to sync (run `kidledger share enable` to share it)")
            }
            return
        }
        guard args.flag("--watch") else {
            let report = try await ledger.syncNow()
            printReport(report, await ledger.status())
            return
        }
        // Automatic sync until interrupted: changes are printed as they arrive.
        await ledger.startAutomaticSync()
        for await event in ledger.events() {
            switch event {
            case .remoteChanges(let children, let transactions):
                var report = SyncReport()
                report.pulledChildren = children
                report.pulledTransactions = transactions
                printReport(report, await ledger.status())
            case .syncFailed(let error):
                FileHandle.standardError.write(Data("kidledger: \(Wording.describe(error)); retrying\n".utf8))
            case .rejected(let change):
                FileHandle.standardError.write(Data("kidledger: a change was refused by the server (\(change.code)) and kept aside\n".utf8))
            case .attentionRequired(let reason):
                FileHandle.standardError.write(Data("kidledger: shared editing is frozen: \(Wording.lowered(reason.explanation)); \(Wording.remedy(reason))\n".utf8))
            }
            fflush(nil)
        }
    }

    private func printReport(_ r: SyncReport, _ status: SyncStatus) {
        if json {
            emit(.object(["pushed": .int(Int64(r.pushed)), "pulledChildren": .int(Int64(r.pulledChildren)),
                          "pulledTransactions": .int(Int64(r.pulledTransactions)), "conflicts": .int(Int64(r.conflicts)),
                          "rejected": .int(Int64(r.rejected)), "state": .string(Output.state(status)),
                          "pending": .int(Int64(status.pendingCount))]))
        } else {
            print("pushed \(r.pushed), pulled \(Output.count(r.pulledChildren, "child", "children")) and \(Output.count(r.pulledTransactions, "transaction", "transactions")); \(Output.describe(status))")
        }
    }

    func share(_ rest: [String]) async throws {
        switch rest.first {
        case "enable":
            try args.expectPositionals(2)
            let ledger = try await ledgerWithServer()
            let preview = try await ledger.sharingPreview()
            let name = args.option("--name") ?? preview.household.name
            let resuming = await ledger.status() != .localOnly && !preview.household.shared
            let what = "household '\(name)' with \(Output.count(preview.childCount, "child", "children")) and \(Output.count(preview.transactionCount, "transaction", "transactions"))"
            if !args.flag("--yes") && !resuming {
                guard isatty(0) == 1 else {
                    // A preview is not a failure: say what would happen and change nothing.
                    if json {
                        emit(.object(["householdName": .string(name), "children": .int(Int64(preview.childCount)),
                                      "transactions": .int(Int64(preview.transactionCount)), "shared": .bool(false)]))
                    } else {
                        print("would upload \(what); nothing was changed, pass --yes to share it")
                    }
                    return
                }
                print("will upload \(what). Continue? [y/N] ", terminator: "")
                fflush(nil)
                guard let answer = readLine(), ["y", "yes"].contains(answer.lowercased()) else {
                    throw CLIError("nothing was changed; pass --yes to confirm")
                }
            }
            try await ledger.enableSharing(householdName: args.option("--name"))
            let household = try await ledger.snapshot().household
            if json {
                emit(.object(["householdId": .string(household?.id ?? ""), "name": .string(household?.name ?? name),
                              "children": .int(Int64(preview.childCount)), "transactions": .int(Int64(preview.transactionCount)),
                              "shared": .bool(true)]))
            } else {
                print("sharing enabled for '\(household?.name ?? name)' (\(Output.count(preview.childCount, "child", "children")), \(Output.count(preview.transactionCount, "transaction", "transactions")) uploaded)")
            }
        case "invite":
            try args.expectPositionals(3)
            let handle = try args.positional(2, "HANDLE")
            let p = try await ledgerWithServer().invite(handle: handle, permission: args.flag("--read-only") ? .readOnly : .readWrite)
            if json { emit(Output.participant(p)) } else { print("invited @\(p.handle ?? handle) (\(p.permission.rawValue))") }
        case "participants":
            try args.expectPositionals(2)
            let all = try await ledgerWithServer().participants()
            if json { emit(.array(all.map(Output.participant))); return }
            if all.isEmpty { print("no participants") }
            for p in all { print("@\(p.handle ?? p.accountId)\t\(p.permission.rawValue)\t\(p.status.rawValue)") }
        case "revoke":
            try args.expectPositionals(3)
            let handle = try args.positional(2, "HANDLE")
            let ledger = try await ledgerWithServer()
            guard var p = try await ledger.participants().first(where: { $0.handle?.lowercased() == handle.lowercased() }) else {
                throw CLIError("handle '\(handle)' is not a participant")
            }
            try await ledger.revoke(p.accountId)
            p.status = .revoked
            if json { emit(Output.participant(p)) } else { print("revoked @\(p.handle ?? handle)") }
        case "stop":
            try args.expectPositionals(2)
            let ledger = try await ledgerWithServer()
            try await ledger.stopSharing()
            if json { emit(Output.household(try await ledger.snapshot().household)) } else { print("sharing stopped; participants lost access") }
        default:
            throw Arguments.UsageError(description: "usage: kidledger share enable|invite|participants|revoke|stop")
        }
    }

    func invitations(_ rest: [String]) async throws {
        try args.expectPositionals(1)
        let all = try await ledgerWithServer().pendingInvitations()
        if json {
            emit(.array(all.map { .object(["id": .string($0.id), "householdName": .string($0.householdName),
                                           "permission": .string($0.permission.rawValue)]) }))
            return
        }
        if all.isEmpty { print("no pending invitations") }
        for i in all { print("\(i.id)\t\(i.householdName)\t\(i.permission.rawValue)\tfrom \(i.ownerDisplayName ?? "?")") }
    }

    func join(_ rest: [String]) async throws {
        try args.expectPositionals(2)
        let id = try args.positional(1, "ID")
        let ledger = try await ledgerWithServer()
        try await bringHere(ledger, anyway: "join anyway",
                            notFound: "no pending invitation '\(id)'; run `kidledger invitations` to list them",
                            bring: { try await ledger.join(id, replacingLocal: $0) },
                            report: { name, counts in "joined '\(name ?? "")' (\(counts))" })
    }

    /// Brings a shared household onto this device (`join`, `use`): `bring` runs with the
    /// `--replace-local` choice, so a different local ledger is kept unless it is given (then
    /// exported first). Prints the export's path and `report(household name, counts)`, or
    /// the household as JSON with `exportPath`.
    func bringHere(_ ledger: Ledger, anyway: String, notFound: String, bring: (Bool) async throws -> URL?,
                   report: (String?, String) -> String) async throws {
        let exported: URL?
        do {
            exported = try await bring(args.flag("--replace-local"))
        } catch LedgerError.joinWouldReplaceLocalLedger {
            let preview = try await ledger.sharingPreview()
            throw CLIError("this device holds a different ledger (\(Output.count(preview.childCount, "child", "children")), \(Output.count(preview.transactionCount, "transaction", "transactions"))); keeping it. Use --replace-local to export it and \(anyway)")
        } catch LedgerError.notFound {
            throw CLIError(notFound)
        }
        if let path = exported?.path, !json { print("previous ledger exported to \(path)") }
        let snapshot = try await ledger.snapshot()
        if json {
            var obj = Output.household(snapshot.household)
            if case .object(var o) = obj { o["exportPath"] = exported.map { .string($0.path) } ?? .null; obj = .object(o) }
            emit(obj)
        } else {
            let transactions = try await ledger.sharingPreview().transactionCount
            print(report(snapshot.household?.name, "\(Output.count(snapshot.children.count, "child", "children")), \(Output.count(transactions, "transaction", "transactions"))"))
        }
    }

    func leave(_ rest: [String]) async throws {
        try args.expectPositionals(1)
        let ledger = try await ledgerWithServer()
        do { try await ledger.leave() } catch LedgerError.notAllowed(let reason) {
            if try await ledger.snapshot().household?.role == .owner {
                throw CLIError("you own this household; use `kidledger share stop` to stop sharing it")
            }
            throw CLIError(Wording.lowered(reason))
        }
        if json { emit(Output.household(try await ledger.snapshot().household)) } else { print("left the household; this device keeps a local copy") }
    }
}
