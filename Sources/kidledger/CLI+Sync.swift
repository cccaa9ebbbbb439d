import Foundation
import LedgerClient
import LedgerModel
#if canImport(Glibc)
import Glibc
#endif

extension CLI {
    func signup() throws {
        try args.expectPositionals(1)
        try requireServer()
        guard let handle = args.option("--handle"), let name = args.option("--name") else {
            throw Arguments.UsageError(description: "usage: kidledger signup --handle H --name N [--device-name D]")
        }
        let device = args.option("--device-name") ?? ProcessInfo.processInfo.hostName
        report(try AccountFlow(engine: engine).signup(handle: handle, displayName: name, deviceName: device))
    }

    func login() throws {
        try args.expectPositionals(1)
        if args.flag("--pinned") {
            report(try AccountFlow(engine: engine).restorePinned())
            return
        }
        try requireServer()
        guard let token = args.option("--token") else { throw Arguments.UsageError(description: "usage: kidledger login --token T | --pinned") }
        report(try AccountFlow(engine: engine).login(token: token))
    }

    private func report(_ outcome: AccountFlow.Outcome) {
        switch outcome {
        case .pinned(let id, let handle):
            if json { emit(.object(["accountId": .string(id), "handle": .string(handle), "accountChanged": .bool(false)])) }
            else { print("signed in as @\(handle)") }
        case .accountChanged(let pinned, let signedIn):
            if json {
                emit(.object(["accountId": .string(signedIn), "pinnedAccountId": .string(pinned), "accountChanged": .bool(true)]))
            } else {
                print("signed in as another account than this ledger's; shared editing is frozen until you go back with `kidledger login --pinned` or join with --replace-local")
            }
        }
    }

    func status(_ rest: [String]) throws {
        try args.expectPositionals(1)
        let status = try service.status()
        if json { emit(Output.status(status)); return }
        let household = try store.household()
        print(Output.describe(status))
        switch try store.phase() {
        case .localOnly: print("ledger: \(household.name), local only")
        case .sharing(let p): print("ledger: \(household.name), sharing being enabled (step: \(p.rawValue)); run `kidledger sync` to finish")
        case .joining: print("ledger: joining a household; run `kidledger sync` to finish")
        case .shared: print("ledger: \(household.name) (\(household.role ?? "member"), \(household.permission ?? "readWrite"))")
        }
        if let handle = try store.string(.accountHandle) {
            if let other = try store.string(.signedInAccountHandle) {
                print("account: @\(handle) (this ledger's); signed in as @\(other)")
            } else {
                print("account: @\(handle)")
            }
        }
        let rejected = try store.rejectedRecords()
        if !rejected.isEmpty { print("\(rejected.count) records were refused by the server and kept aside") }
    }

    func sync(_ rest: [String]) throws {
        try args.expectPositionals(1)
        try requireServer()
        if try store.phase() == .localOnly, try store.string(.token) != nil {
            if json { printReport(SyncEngine.Report()) } else {
                print("this ledger is local only: nothing to sync (run `kidledger share enable` to share it)")
            }
            return
        }
        guard args.flag("--watch") else {
            let report = try engine.sync()
            printReport(report)
            return
        }
        var failures = 0
        var rng = SystemRandomNumberGenerator()
        while true {
            do {
                let report = try engine.sync(wait: 30)
                failures = 0
                if report.pushed + report.pulledChildren + report.pulledTransactions > 0 { printReport(report) }
            } catch ClientError.offline(let why) {
                failures += 1
                FileHandle.standardError.write(Data("kidledger: offline (\(why)); retrying\n".utf8))
                engine.retry.sleep(engine.retry.delay(attempt: failures, retryAfter: nil, using: &rng))
            }
            fflush(nil)
        }
    }

    private func printReport(_ r: SyncEngine.Report) {
        let status = (try? service.status()) ?? .synced
        if json {
            emit(.object(["pushed": .int(Int64(r.pushed)), "pulledChildren": .int(Int64(r.pulledChildren)),
                          "pulledTransactions": .int(Int64(r.pulledTransactions)), "conflicts": .int(Int64(r.conflicts)),
                          "rejected": .int(Int64(r.rejected)), "state": .string(status.state),
                          "pending": .int(Int64(status.pending))]))
        } else {
            print("pushed \(r.pushed), pulled \(Output.count(r.pulledChildren, "child", "children")) and \(Output.count(r.pulledTransactions, "transaction", "transactions")); \(Output.describe(status))")
        }
    }

    func share(_ rest: [String]) throws {
        try requireServer()
        let flow = ShareFlow(engine: engine)
        switch rest.first {
        case "enable":
            try args.expectPositionals(2)
            let preview = try flow.preview(name: args.option("--name"))
            let resuming: Bool
            if case .sharing = try store.phase() { resuming = true } else { resuming = false }
            if !args.flag("--yes") && !resuming {
                let line = "will upload household '\(preview.householdName)' with \(Output.count(preview.children, "child", "children")) and \(Output.count(preview.transactions, "transaction", "transactions"))"
                guard isatty(0) == 1 else {
                    FileHandle.standardError.write(Data("kidledger: \(line); nothing was changed, pass --yes to confirm\n".utf8))
                    exit(1)
                }
                print("\(line). Continue? [y/N] ", terminator: "")
                fflush(nil)
                guard let answer = readLine(), ["y", "yes"].contains(answer.lowercased()) else { throw ClientError.confirmationRequired }
            }
            try flow.enable(name: args.option("--name"))
            let household = try store.household()
            if json {
                emit(.object(["householdId": .string(household.id), "name": .string(household.name),
                              "children": .int(Int64(preview.children)), "transactions": .int(Int64(preview.transactions)),
                              "shared": .bool(true)]))
            } else {
                print("sharing enabled for '\(household.name)' (\(Output.count(preview.children, "child", "children")), \(Output.count(preview.transactions, "transaction", "transactions")) uploaded)")
            }
        case "invite":
            try args.expectPositionals(3)
            let p = try flow.invite(handle: try args.positional(2, "HANDLE"), readOnly: args.flag("--read-only"))
            if json { emit(Output.participant(p)) } else { print("invited @\(p.handle ?? "") (\(p.permission))") }
        case "participants":
            try args.expectPositionals(2)
            let all = try flow.participants()
            if json { emit(.array(all.map(Output.participant))); return }
            if all.isEmpty { print("no participants") }
            for p in all { print("@\(p.handle ?? p.accountId)\t\(p.permission)\t\(p.status)") }
        case "revoke":
            try args.expectPositionals(3)
            let p = try flow.revoke(handle: try args.positional(2, "HANDLE"))
            if json { emit(Output.participant(p)) } else { print("revoked @\(p.handle ?? "")") }
        case "stop":
            try args.expectPositionals(2)
            try flow.stop()
            if json { emit(Output.household(try store.household())) } else { print("sharing stopped; participants lost access") }
        default:
            throw Arguments.UsageError(description: "usage: kidledger share enable|invite|participants|revoke|stop")
        }
    }

    func invitations(_ rest: [String]) throws {
        try args.expectPositionals(1)
        try requireServer()
        let all = try JoinFlow(engine: engine).invitations()
        if json {
            emit(.array(all.map { .object(["id": .string($0.id), "householdName": .string($0.householdName),
                                           "permission": .string($0.permission)]) }))
            return
        }
        if all.isEmpty { print("no pending invitations") }
        for i in all { print("\(i.id)\t\(i.householdName)\t\(i.permission)\tfrom \(i.ownerDisplayName ?? "?")") }
    }

    func join(_ rest: [String]) throws {
        try args.expectPositionals(2)
        try requireServer()
        let result = try JoinFlow(engine: engine).join(invitationId: try args.positional(1, "ID"),
                                                       replaceLocal: args.flag("--replace-local"))
        if let path = result.exportPath, !json { print("previous ledger exported to \(path)") }
        if json {
            var obj = Output.household(result.household)
            if case .object(var o) = obj { o["exportPath"] = result.exportPath.map { .string($0) } ?? .null; obj = .object(o) }
            emit(obj)
        } else {
            let counts = try store.counts()
            print("joined '\(result.household.name)' (\(Output.count(counts.children, "child", "children")), \(Output.count(counts.transactions, "transaction", "transactions")))")
        }
    }

    func leave(_ rest: [String]) throws {
        try args.expectPositionals(1)
        try requireServer()
        try JoinFlow(engine: engine).leave()
        if json { emit(Output.household(try store.household())) } else { print("left the household; this device keeps a local copy") }
    }
}
