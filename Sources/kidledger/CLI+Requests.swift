import Foundation
import LedgerClient
import LedgerModel

/// Child devices and requests: a parent pairs a device to a child (`child pair`), the child's
/// device (`child-redeem`) makes requests (`request`), parents decide (`approve`, `decline`).
extension CLI {
    /// `child pair NAME [--device-name N]`, `child devices NAME`, `child revoke NAME TOKENID`.
    func childDeviceCommand(_ rest: [String]) async throws {
        let usage = "usage: kidledger child pair NAME [--device-name N] | child devices NAME | child revoke NAME TOKENID"
        guard let sub = rest.first, rest.count == (sub == "revoke" ? 3 : 2) else { throw Arguments.UsageError(description: usage) }
        let ledger = try await ledgerWithServer()
        let child = try await resolveChild(ledger, rest[1])
        switch sub {
        case "pair":
            let code = try await ledger.pairChildDevice(child.id, deviceName: args.option("--device-name"))
            if json {
                emit(.object(["code": .string(code.text), "expiresAt": .string(Output.ms(code.expiresAt)), "childId": .string(child.id)]))
            } else {
                print(code.text)
                print("on \(child.name)'s device, within 10 minutes: kidledger child-redeem \(code.text)")
            }
        case "devices":
            let devices = try await ledger.childDevices(of: child.id)
            if json { emit(.array(devices.map(Output.childDevice))); return }
            if devices.isEmpty { print("no device is paired to \(child.name); pair one with `kidledger child pair \(child.name)`") }
            for d in devices {
                print("\(d.id)\t\(d.name ?? "(unnamed)")\t\(d.createdAt.map(Output.ms) ?? "")")
            }
        case "revoke":
            do {
                try await ledger.revokeChildDevice(rest[2], of: child.id)
            } catch LedgerError.notFound, LedgerError.server(code: "not_found", _, _) {
                throw CLIError("no device '\(rest[2])' is paired to \(child.name); run `kidledger child devices \(child.name)`")
            }
            if json { emit(.object(["revoked": .string(rest[2])])) } else { print("\(child.name)'s device \(rest[2]) is no longer paired") }
        default:
            throw Arguments.UsageError(description: usage)
        }
    }

    /// `child-redeem CODE [--device-name N]`: pairs this device (a new store) to a child.
    func childRedeem(_ rest: [String]) async throws {
        try args.expectPositionals(2)
        let code = try args.positional(1, "CODE")
        let ledger = try await ledgerWithServer()
        let mode: LedgerMode
        do {
            mode = try await ledger.redeemChildCode(code, deviceName: args.option("--device-name"))
        } catch LedgerError.linkCodeInvalid {
            throw CLIError("that pairing code is not valid (mistyped, used or expired); make a new one with `kidledger child pair NAME` on a parent's device")
        }
        let snapshot = try await ledger.snapshot()
        guard case .child(let childId) = mode else { return }
        let child = snapshot.children.first { $0.id == childId }
        if json {
            emit(.object(["childId": .string(childId), "name": child.map { .string($0.name) } ?? .null,
                          "balanceCents": child.map { .int($0.balanceCents) } ?? .null,
                          "status": .string(Output.state(snapshot.status))]))
            return
        }
        if let child {
            print("this device is \(child.name)'s; balance \(Cents.format(child.balanceCents))")
        } else {
            print("this device is paired to a child; its ledger arrives with `kidledger sync`")
        }
    }

    /// `balance`: the paired child's balance on a child's device, every child's on a parent's.
    func balanceCommand(_ rest: [String]) async throws {
        try args.expectPositionals(1)
        let snapshot = try await ledger().snapshot()
        if json { emit(.array(snapshot.children.map(Output.childSummary))); return }
        if snapshot.children.isEmpty, case .child = snapshot.mode {
            print("nothing synced yet; run `kidledger sync`")
        }
        for c in snapshot.children { print("\(c.name)\t\(Cents.format(c.balanceCents))") }
    }

    /// `request spend|chore AMOUNT NOTE [--child C]` (the child's own on a child's device).
    func requestCommand(_ rest: [String]) async throws {
        let usage = "usage: kidledger request spend|chore AMOUNT NOTE [--child CHILD]"
        guard rest.count == 3, let kind = ChildRequest.Kind(rawValue: rest[0]) else { throw Arguments.UsageError(description: usage) }
        let cents: Int64
        do { cents = try AmountParser.cents(from: rest[1]) } catch { throw Arguments.UsageError(description: error.description) }
        let ledger = try await ledger()
        var childId: String?
        if let name = args.option("--child") {
            childId = try await resolveChild(ledger, name).id
        } else if await ledger.mode == .parent {
            throw Arguments.UsageError(description: "on a parent's device, say whose request it is: --child CHILD")
        }
        let draft: RequestDraft = kind == .spend ? .spend(cents: cents, note: rest[2]) : .chore(cents: cents, note: rest[2])
        let request = try await ledger.request(draft, for: childId)
        await autoSync(ledger)
        let current = (try? await ledger.request(request.id)) ?? request
        if json { emit(Output.request(current)); return }
        print("asked: \(describe(current)) (\(current.id))\(current.isPending ? "; uploaded with the next sync" : "")")
    }

    /// `requests [--all]`: pending requests (every request with --all), newest first.
    func requestsCommand(_ rest: [String]) async throws {
        try args.expectPositionals(1)
        let ledger = try await ledger()
        if await ledger.server != nil { _ = try? await withDeadline(seconds: 5) { try await ledger.syncNow() } }
        let all = try await ledger.requests(status: args.flag("--all") ? nil : .pending)
        if json { emit(.array(all.map(Output.request))); return }
        let names = Dictionary(try await ledger.snapshot().children.map { ($0.id, $0.name) }, uniquingKeysWith: { a, _ in a })
        if all.isEmpty { print(args.flag("--all") ? "no requests yet" : "no request waits for a decision") }
        for r in all {
            print("\(r.id)\t\(names[r.childId] ?? r.childId)\t\(describe(r))\t\(r.status.rawValue)\(r.isPending ? " (not uploaded yet)" : "")")
        }
    }

    /// `approve ID [AMOUNT]`, `decline ID [--note N]`.
    func decideCommand(_ rest: [String], approve: Bool) async throws {
        let usage = approve ? "usage: kidledger approve ID [AMOUNT]" : "usage: kidledger decline ID [--note N]"
        guard approve ? (1...2).contains(rest.count) : rest.count == 1 else { throw Arguments.UsageError(description: usage) }
        var cents: Int64?
        if approve, rest.count == 2 {
            do { cents = try AmountParser.cents(from: rest[1]) } catch { throw Arguments.UsageError(description: error.description) }
        }
        let ledger = try await ledger()
        let id = try await resolveRequest(ledger, rest[0])
        let decided: ChildRequest
        do {
            decided = approve ? try await ledger.approve(id, cents: cents) : try await ledger.decline(id, note: args.option("--note"))
        } catch LedgerError.notFound {
            throw CLIError("no request '\(rest[0])'; run `kidledger requests --all`")
        }
        await autoSync(ledger)
        let current = (try? await ledger.request(decided.id)) ?? decided
        if json { emit(Output.request(current)); return }
        if current.status == (approve ? .approved : .declined) {
            print("\(current.status.rawValue): \(describe(current))")
        } else {
            // Another parent's decision reached the server first: it stands.
            print("this request was \(current.status.rawValue) on another device first: \(describe(current))")
        }
    }

    /// A request id from its full id or a unique prefix of at least eight characters; a request
    /// this device has not seen yet is looked for after one quick sync.
    private func resolveRequest(_ ledger: Ledger, _ text: String) async throws -> String {
        let key = text.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
        guard key.count >= 8 else { throw CLIError("give the request's id (at least its first 8 characters); run `kidledger requests`") }
        var matches = try await ledger.requests().filter { $0.id.hasPrefix(key) }
        if matches.isEmpty, await ledger.server != nil {
            _ = try? await withDeadline(seconds: 5) { try await ledger.syncNow() }
            matches = try await ledger.requests().filter { $0.id.hasPrefix(key) }
        }
        guard matches.count == 1 else {
            throw CLIError(matches.isEmpty ? "no request '\(text)'; run `kidledger requests --all`" : "more than one request starts with '\(text)'")
        }
        return matches[0].id
    }

    private func describe(_ r: ChildRequest) -> String {
        let what = r.kind == .spend ? "spend \(Cents.format(r.amountCents))" : "chore \(Cents.format(r.amountCents))"
        var text = r.note.isEmpty ? what : "\(what) \"\(r.note)\""
        if let note = r.decisionNote, !note.isEmpty { text += " — \(note)" }
        return text
    }
}

extension Output {
    static func request(_ r: ChildRequest) -> JSONValue {
        .object(["id": .string(r.id), "childId": .string(r.childId), "kind": .string(r.kind.rawValue),
                 "amountCents": .int(r.amountCents), "note": .string(r.note), "status": .string(r.status.rawValue),
                 "decidedBy": r.decidedBy.map { .string($0) } ?? .null,
                 "decidedAt": r.decidedAt.map { .string(ms($0)) } ?? .null,
                 "decisionNote": r.decisionNote.map { .string($0) } ?? .null,
                 "paymentId": r.paymentId.map { .string($0) } ?? .null,
                 "createdAt": .string(ms(r.createdAt)), "isPending": .bool(r.isPending)])
    }

    static func childDevice(_ d: ChildDevice) -> JSONValue {
        .object(["id": .string(d.id), "name": d.name.map { .string($0) } ?? .null,
                 "createdAt": d.createdAt.map { .string(ms($0)) } ?? .null])
    }
}
