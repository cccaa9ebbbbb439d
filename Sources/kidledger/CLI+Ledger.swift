import Foundation
import LedgerClient
import LedgerModel

extension CLI {
    func childCommand(_ rest: [String]) throws {
        guard rest.first == "add" else { throw Arguments.UsageError(description: "usage: kidledger child add NAME") }
        guard rest.count == 2 else { throw Arguments.UsageError(description: "usage: kidledger child add NAME") }
        let child = try service.addChild(name: rest[1])
        autoSync()
        if json { emit(Output.child(child, balance: 0)) } else { print("added \(child.name) (\(child.id))") }
    }

    func children(_ rest: [String]) throws {
        try args.expectPositionals(1)
        let all = try service.children()
        if json { emit(.array(all.map(Output.childSummary))); return }
        if all.isEmpty { print("no children yet; add one with `kidledger child add NAME`") }
        for c in all {
            print("\(c.child.name)\t\(Cents.format(c.balanceCents))\(c.child.archived ? "\t(archived)" : "")\t\(c.child.id)")
        }
    }

    func money(_ rest: [String], take: Bool) throws {
        try args.expectPositionals(3)
        let usage = take ? "usage: kidledger take CHILD AMOUNT [--note T]" : "usage: kidledger add CHILD AMOUNT [--note T] [--source S]"
        guard rest.count == 2 else { throw Arguments.UsageError(description: usage) }
        let child = try service.resolveChild(rest[0])
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
        let tx = take ? try service.takeMoney(childId: child.id, cents: cents, note: note)
                      : try service.addMoney(childId: child.id, cents: cents, note: note, source: source)
        autoSync()
        if json { emit(Output.transaction(tx)); return }
        print("\(take ? "took" : "added") \(Cents.format(cents)) \(take ? "from" : "to") \(child.name); balance \(Cents.format(try store.balance(childId: child.id)))")
    }

    func undo(_ rest: [String]) throws {
        try args.expectPositionals(2)
        let child = try service.resolveChild(try args.positional(1, "CHILD"))
        let reversal = try service.undoLast(childId: child.id)
        autoSync()
        if json { emit(Output.transaction(reversal)); return }
        print("undid \(Cents.format(-reversal.amountCents)) for \(child.name); balance \(Cents.format(try store.balance(childId: child.id)))")
    }

    func history(_ rest: [String]) throws {
        try args.expectPositionals(2)
        let child = try service.resolveChild(try args.positional(1, "CHILD"))
        let entries = try service.history(childId: child.id)
        if json { emit(.array(entries.map { Output.transaction($0.transaction, reversedById: $0.reversedById) })); return }
        for e in entries {
            let t = e.transaction
            var line = "\(Timestamp.format(ms: t.createdAt))\t\(Cents.format(t.amountCents))\t\(t.note)"
            if t.reversesId != nil { line += "\t(undo)" }
            if e.reversedById != nil { line += "\t(undone)" }
            print(line)
        }
        print("balance \(Cents.format(try store.balance(childId: child.id)))")
    }

    func rename(_ rest: [String]) throws {
        try args.expectPositionals(3)
        let child = try service.resolveChild(try args.positional(1, "CHILD"))
        let renamed = try service.renameChild(id: child.id, to: try args.positional(2, "NAME"))
        autoSync()
        if json { emit(Output.child(renamed, balance: try store.balance(childId: renamed.id))); return }
        print("renamed \(child.name) to \(renamed.name)")
    }

    func archive(_ rest: [String], _ archived: Bool) throws {
        try args.expectPositionals(2)
        let child = try service.resolveChild(try args.positional(1, "CHILD"))
        let changed = try service.setArchived(id: child.id, archived)
        autoSync()
        if json { emit(Output.child(changed, balance: try store.balance(childId: changed.id))); return }
        print("\(archived ? "archived" : "unarchived") \(changed.name)")
    }

    func export(_ rest: [String]) throws {
        try args.expectPositionals(1)
        let now = Timestamp.nowMs()
        let path = args.option("--out") ?? "kidledger-export-\(now).json.gz"
        try LedgerExporter(store: store).export(to: path, now: now)
        if json { emit(.object(["path": .string(path)])) } else { print("exported to \(path)") }
    }

    func importFile(_ rest: [String]) throws {
        try args.expectPositionals(2)
        let counts = try LedgerExporter(store: store).importFile(try args.positional(1, "FILE"), now: Timestamp.nowMs())
        if json { emit(.object(["children": .int(Int64(counts.children)), "transactions": .int(Int64(counts.transactions))])) }
        else { print("imported \(Output.count(counts.children, "child", "children")) and \(Output.count(counts.transactions, "transaction", "transactions"))") }
    }
}
