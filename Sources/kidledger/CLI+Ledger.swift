import Foundation
import LedgerClient
import LedgerModel

extension CLI {
    /// Finds a child by id (any case) or by name (case-insensitive, after trimming); of several
    /// children with one name, the only one not archived.
    func resolveChild(_ ledger: Ledger, _ nameOrId: String) async throws -> ChildSummary {
        let all = try await ledger.snapshot().children
        let key = nameOrId.trimmingCharacters(in: .whitespacesAndNewlines)
        if let byId = all.first(where: { $0.id == key.lowercased() }) { return byId }
        let byName = all.filter { $0.name.lowercased() == key.lowercased() }
        if byName.count > 1 {
            let active = byName.filter { !$0.archived }
            if active.count == 1 { return active[0] }
            throw CLIError("more than one child is named '\(key)'; use the child's id")
        }
        guard let child = byName.first else { throw CLIError("no child named or with id '\(key)'") }
        return child
    }

    func balance(_ ledger: Ledger, _ childId: String) async throws -> Int64 {
        try await ledger.snapshot().children.first { $0.id == childId }?.balanceCents ?? 0
    }

    func childCommand(_ rest: [String]) async throws {
        if let sub = rest.first, ["pair", "devices", "revoke"].contains(sub) { return try await childDeviceCommand(rest) }
        guard rest.count == 2, rest.first == "add" else {
            throw Arguments.UsageError(description: "usage: kidledger child add NAME | child pair NAME | child devices NAME | child revoke NAME TOKENID")
        }
        let ledger = try await ledger()
        let child = try await ledger.addChild(named: rest[1])
        await autoSync(ledger)
        if json { emit(Output.child(child, balance: 0)) } else { print("added \(child.name) (\(child.id))") }
    }

    func children(_ rest: [String]) async throws {
        try args.expectPositionals(1)
        let all = try await ledger().snapshot().children
        if json { emit(.array(all.map(Output.childSummary))); return }
        if all.isEmpty { print("no children yet; add one with `kidledger child add NAME`") }
        for c in all {
            print("\(c.name)\t\(Cents.format(c.balanceCents))\(c.archived ? "\t(archived)" : "")\t\(c.id)")
        }
    }

    func money(_ rest: [String], take: Bool) async throws {
        try args.expectPositionals(3)
        let usage = take ? "usage: kidledger take CHILD AMOUNT [--note T]" : "usage: kidledger add CHILD AMOUNT [--note T] [--source S]"
        guard rest.count == 2 else { throw Arguments.UsageError(description: usage) }
        let cents: Int64
        do { cents = try AmountParser.cents(from: rest[1]) } catch { throw Arguments.UsageError(description: error.description) }
        var source = TransactionSource.manual
        if let s = args.option("--source") {
            if take { throw Arguments.UsageError(description: "take has no --source") }
            guard let parsed = TransactionSource(rawValue: s) else {
                throw Arguments.UsageError(description: "--source must be one of manual, siri, api, import, allowance")
            }
            source = parsed
        }
        let note = args.option("--note") ?? ""
        let ledger = try await ledger()
        let child = try await resolveChild(ledger, rest[0])
        let tx = take ? try await ledger.take(cents: cents, from: child.id, note: note)
                      : try await ledger.add(cents: cents, to: child.id, note: note, source: source)
        await autoSync(ledger)
        if json { emit(Output.transaction(tx)); return }
        print("\(take ? "took" : "added") \(Cents.format(cents)) \(take ? "from" : "to") \(child.name); balance \(Cents.format(try await balance(ledger, child.id)))")
    }

    func undo(_ rest: [String]) async throws {
        try args.expectPositionals(2)
        let name = try args.positional(1, "CHILD")
        let ledger = try await ledger()
        let child = try await resolveChild(ledger, name)
        let reversal: LedgerClient.LedgerTransaction
        do { reversal = try await ledger.undoLast(for: child.id) } catch LedgerError.nothingToUndo {
            throw CLIError("\(child.name) has nothing to undo")
        }
        await autoSync(ledger)
        if json { emit(Output.transaction(reversal)); return }
        print("undid \(Cents.format(-reversal.amountCents)) for \(child.name); balance \(Cents.format(try await balance(ledger, child.id)))")
    }

    func history(_ rest: [String]) async throws {
        try args.expectPositionals(2)
        let name = try args.positional(1, "CHILD")
        let ledger = try await ledger()
        let child = try await resolveChild(ledger, name)
        var entries: [LedgerClient.LedgerTransaction] = []
        var cursor: String?
        repeat {
            let page = try await ledger.history(of: child.id, limit: 500, before: cursor)
            entries += page.items
            cursor = page.nextCursor
        } while cursor != nil
        if json { emit(.array(entries.map { Output.transaction($0) })); return }
        for t in entries {
            var line = "\(Timestamp.format(ms: Int64((t.createdAt.timeIntervalSince1970 * 1000).rounded())))\t\(Cents.format(t.amountCents))\t\(t.note)"
            if t.reversesId != nil { line += "\t(undo)" }
            if t.reversedBy != nil { line += "\t(undone)" }
            print(line)
        }
        print("balance \(Cents.format(try await balance(ledger, child.id)))")
    }

    func rename(_ rest: [String]) async throws {
        try args.expectPositionals(3)
        let name = try args.positional(1, "CHILD"), newName = try args.positional(2, "NAME")
        let ledger = try await ledger()
        let child = try await resolveChild(ledger, name)
        let renamed = try await ledger.rename(child.id, to: newName)
        await autoSync(ledger)
        if json { emit(Output.child(renamed, balance: try await balance(ledger, renamed.id))); return }
        print("renamed \(child.name) to \(renamed.name)")
    }

    func archive(_ rest: [String], _ archived: Bool) async throws {
        try args.expectPositionals(2)
        let name = try args.positional(1, "CHILD")
        let ledger = try await ledger()
        let child = try await resolveChild(ledger, name)
        let changed = try await ledger.setArchived(archived, for: child.id)
        await autoSync(ledger)
        if json { emit(Output.child(changed, balance: try await balance(ledger, changed.id))); return }
        print("\(archived ? "archived" : "unarchived") \(changed.name)")
    }

    func export(_ rest: [String]) async throws {
        try args.expectPositionals(1)
        let path = args.option("--out") ?? "kidledger-export-\(Timestamp.nowMs()).json.gz"
        try await ledger().export(to: URL(fileURLWithPath: path))
        if json { emit(.object(["path": .string(path)])) } else { print("exported to \(path)") }
    }

    func importFile(_ rest: [String]) async throws {
        try args.expectPositionals(2)
        let path = try args.positional(1, "FILE")
        let ledger = try await ledger()
        try await ledger.importLedger(from: URL(fileURLWithPath: path))
        let snapshot = try await ledger.snapshot()
        let preview = try await ledger.sharingPreview()
        let children = snapshot.children.count, transactions = preview.transactionCount
        if json { emit(.object(["children": .int(Int64(children)), "transactions": .int(Int64(transactions))])) }
        else { print("imported \(Output.count(children, "child", "children")) and \(Output.count(transactions, "transaction", "transactions"))") }
    }
}
