import Foundation
import LedgerClient
import LedgerModel

/// `schedule add|list|pause|resume|remove`, `pot add|list|move`, `goal set`.
extension CLI {
    static let scheduleUsage = "usage: kidledger schedule add CHILD AMOUNT|--rate PERCENT --every weekly|every-two-weeks|monthly "
        + "--first YYYY-MM-DD [--time-zone ZONE] [--end YYYY-MM-DD] [--note T] | schedule list [CHILD] | "
        + "schedule edit ID [AMOUNT|--rate PERCENT] [--every …] [--end YYYY-MM-DD|none] [--note T] | "
        + "schedule pause|remove ID | schedule resume ID [--back-pay]"
    static let potUsage = "usage: kidledger pot add CHILD NAME [--target AMOUNT] [--by YYYY-MM-DD] | pot list CHILD | "
        + "pot move CHILD AMOUNT FROM-POT TO-POT [--note T]"
    static let goalUsage = "usage: kidledger goal set CHILD POT AMOUNT|none [--by YYYY-MM-DD]"

    // MARK: schedule

    func scheduleCommand(_ rest: [String]) async throws {
        switch rest.first {
        case "add": try await addSchedule(Array(rest.dropFirst()))
        case "list":
            guard rest.count <= 2 else { throw Arguments.UsageError(description: Self.scheduleUsage) }
            try await listSchedules(rest.count == 2 ? rest[1] : nil)
        case "edit":
            guard rest.count == 2 || rest.count == 3 else { throw Arguments.UsageError(description: Self.scheduleUsage) }
            try await editSchedule(rest[1], amount: rest.count == 3 ? rest[2] : nil)
        case "pause", "resume", "remove":
            guard rest.count == 2 else { throw Arguments.UsageError(description: Self.scheduleUsage) }
            try await changeSchedule(rest[0], rest[1])
        default: throw Arguments.UsageError(description: Self.scheduleUsage)
        }
    }

    private func addSchedule(_ rest: [String]) async throws {
        let rate = args.option("--rate")
        guard rest.count == (rate == nil ? 2 : 1) else { throw Arguments.UsageError(description: Self.scheduleUsage) }
        guard let everyText = args.option("--every") else { throw Arguments.UsageError(description: "missing --every weekly|every-two-weeks|monthly") }
        let cadence = try Self.cadence(everyText)
        guard let firstText = args.option("--first") else { throw Arguments.UsageError(description: "missing --first YYYY-MM-DD") }
        let first = try Self.date(firstText, "--first")
        let end = try args.option("--end").map { try Self.date($0, "--end") }
        let zoneName = args.option("--time-zone") ?? TimeZone.current.identifier
        guard let zone = TimeZone(identifier: zoneName),
              zone.identifier == "GMT" || (try? ScheduleTimeZone(identifier: zone.identifier)) != nil else {
            throw Arguments.UsageError(description: "--time-zone must be an IANA name such as Europe/Zurich, or UTC; not '\(zoneName)'")
        }
        let terms: NewSchedule
        if let rate {
            terms = .interest(basisPoints: try Self.basisPoints(rate), every: cadence, firstDate: first, timeZone: zone)
        } else {
            let cents: Int64
            do { cents = try AmountParser.cents(from: rest[1]) } catch { throw Arguments.UsageError(description: error.description) }
            terms = .allowance(cents: cents, every: cadence, firstDate: first, timeZone: zone)
        }
        let ledger = try await ledger()
        let child = try await resolveChild(ledger, rest[0])
        let before = try await balance(ledger, child.id)
        let schedule = try await ledger.addSchedule(terms, for: child.id, endDate: end, note: args.option("--note") ?? "")
        await autoSync(ledger)
        if json { emit(Output.schedule(schedule)); return }
        print("added \(Self.describe(schedule)) for \(child.name) (\(schedule.id))")
        let paid = try await balance(ledger, child.id) - before
        if paid != 0 { print("paid \(Cents.format(paid)) already due; balance \(Cents.format(try await balance(ledger, child.id)))") }
        if let dropped = schedule.catchUp?.dropped, dropped > 0 {
            print("\(Output.count(dropped, "older period", "older periods")) not paid: at most 366 are paid at once")
        }
    }

    private func listSchedules(_ childName: String?) async throws {
        let ledger = try await ledger()
        let child = try await childName.asyncMap { try await resolveChild(ledger, $0) }
        let names = Dictionary(try await ledger.snapshot().children.map { ($0.id, $0.name) }, uniquingKeysWith: { a, _ in a })
        let all = try await ledger.schedules(for: child?.id)
        if json { emit(.array(all.map(Output.schedule))); return }
        if all.isEmpty { print("no schedules yet; add one with `kidledger schedule add CHILD AMOUNT --every weekly --first YYYY-MM-DD`") }
        for s in all {
            let next = s.nextDueDate.map { "next \($0)" } ?? (s.paused ? "paused" : "no further payments")
            print("\(s.id)\t\(names[s.childId] ?? s.childId)\t\(Self.describe(s))\t\(next)")
        }
    }

    private func changeSchedule(_ verb: String, _ idText: String) async throws {
        let ledger = try await ledger()
        let id = try await resolveSchedule(ledger, idText)
        let before = try await ledger.snapshot().children.reduce(Int64(0)) { $0 + $1.balanceCents }
        var changed: Schedule?
        switch verb {
        case "pause": changed = try await ledger.pause(id)
        case "resume": changed = try await ledger.resume(id, backPay: args.flag("--back-pay"))
        default: try await ledger.remove(id)
        }
        await autoSync(ledger)
        let paid = try await ledger.snapshot().children.reduce(Int64(0)) { $0 + $1.balanceCents } - before
        if json {
            emit(changed.map(Output.schedule) ?? .object(["id": .string(id), "removed": .bool(true)]))
            return
        }
        let word = ["pause": "paused", "resume": "resumed", "remove": "removed"][verb] ?? verb
        print("\(word) schedule \(id)" + (changed?.nextDueDate.map { "; next payment \($0)" } ?? ""))
        if let skipped = changed?.catchUp?.skipped, skipped > 0 {
            print("skipped \(Output.count(skipped, "period", "periods")) that fell due while paused (--back-pay pays them)")
        }
        if paid != 0 { print("paid \(Cents.format(paid)) that was due") }
    }

    private func editSchedule(_ idText: String, amount: String?) async throws {
        let cents = try amount.map(Self.amount)
        let rate = try args.option("--rate").map(Self.basisPoints)
        let cadence = try args.option("--every").map(Self.cadence)
        let end: LocalDate?? = try args.option("--end").map { $0 == "none" ? .some(nil) : .some(try Self.date($0, "--end")) } ?? nil
        let note = args.option("--note")
        guard cents != nil || rate != nil || cadence != nil || end != nil || note != nil else {
            throw Arguments.UsageError(description: "nothing to change: give an AMOUNT, --rate, --every, --end or --note")
        }
        let ledger = try await ledger()
        let id = try await resolveSchedule(ledger, idText)
        let edited = try await ledger.editSchedule(id, cents: cents, rateBasisPoints: rate, every: cadence, endDate: end, note: note,
                                                   backPay: args.flag("--back-pay"))
        await autoSync(ledger)
        if json { emit(Output.schedule(edited)); return }
        print("changed schedule \(id): \(Self.describe(edited))" + (edited.nextDueDate.map { "; next payment \($0)" } ?? ""))
        if let paid = edited.catchUp?.paid, paid > 0 { print("paid \(Output.count(paid, "period", "periods")) that was due") }
    }

    /// A schedule by its id or a unique start of it (at least 4 characters).
    private func resolveSchedule(_ ledger: Ledger, _ text: String) async throws -> String {
        let key = text.trimmingCharacters(in: .whitespaces).lowercased()
        let matches = try await ledger.schedules().filter { $0.id == key || (key.count >= 4 && $0.id.hasPrefix(key)) }
        guard !matches.isEmpty else { throw CLIError("no schedule with id '\(text)'; see `kidledger schedule list`") }
        guard matches.count == 1 else { throw CLIError("more than one schedule starts with '\(text)'; give more of the id") }
        return matches[0].id
    }

    // MARK: pot, goal

    func potCommand(_ rest: [String]) async throws {
        switch rest.first {
        case "add":
            guard rest.count == 3 else { throw Arguments.UsageError(description: Self.potUsage) }
            let target = try args.option("--target").map(Self.amount)
            let by = try args.option("--by").map { try Self.date($0, "--by") }
            let ledger = try await ledger()
            let child = try await resolveChild(ledger, rest[1])
            let pot = try await ledger.addPot(named: rest[2], for: child.id, target: target, by: by)
            await autoSync(ledger)
            if json { emit(Output.pot(pot)) } else { print("added pot \(pot.name) for \(child.name) (\(pot.id))") }
        case "list":
            guard rest.count == 2 else { throw Arguments.UsageError(description: Self.potUsage) }
            let ledger = try await ledger()
            let child = try await resolveChild(ledger, rest[1])
            let pots = try await ledger.pots(of: child.id)
            if json { emit(.array(pots.map(Output.pot))); return }
            for p in pots { print("\(p.name)\t\(Cents.format(p.balanceCents))\(Self.goal(p))\(p.archived ? "\t(archived)" : "")\t\(p.id)") }
            print("balance \(Cents.format(try await balance(ledger, child.id)))")
        case "move":
            guard rest.count == 5 else { throw Arguments.UsageError(description: Self.potUsage) }
            let cents = try Self.amount(rest[2])
            let ledger = try await ledger()
            let child = try await resolveChild(ledger, rest[1])
            let from = try await resolvePot(ledger, child, rest[3]), to = try await resolvePot(ledger, child, rest[4])
            let transfer = try await ledger.move(cents: cents, from: from.id, to: to.id, note: args.option("--note") ?? "")
            await autoSync(ledger)
            if json {
                emit(.object(["id": .string(transfer.id), "out": Output.transaction(transfer.out), "in": Output.transaction(transfer.in)]))
                return
            }
            let pots = try await ledger.pots(of: child.id)
            let left = pots.first { $0.id == from.id }?.balanceCents ?? 0, now = pots.first { $0.id == to.id }?.balanceCents ?? 0
            print("moved \(Cents.format(cents)) from \(from.name) to \(to.name); \(from.name) \(Cents.format(left)), \(to.name) \(Cents.format(now))")
        default: throw Arguments.UsageError(description: Self.potUsage)
        }
    }

    func goalCommand(_ rest: [String]) async throws {
        guard rest.count == 4, rest[0] == "set" else { throw Arguments.UsageError(description: Self.goalUsage) }
        let target: Int64? = rest[3].lowercased() == "none" ? nil : try Self.amount(rest[3])
        let by = try args.option("--by").map { try Self.date($0, "--by") }
        let ledger = try await ledger()
        let child = try await resolveChild(ledger, rest[1])
        let pot = try await resolvePot(ledger, child, rest[2])
        let changed = try await ledger.setGoal(target: target, by: by, for: pot.id)
        await autoSync(ledger)
        if json { emit(Output.pot(changed)); return }
        print(target == nil ? "removed the goal of \(changed.name)" : "goal of \(changed.name):\(Self.goal(changed).dropFirst(5))")
    }

    /// A pot of `child` by id or by name (case-insensitive).
    private func resolvePot(_ ledger: Ledger, _ child: ChildSummary, _ text: String) async throws -> PotSummary {
        let pots = try await ledger.pots(of: child.id)
        let key = text.trimmingCharacters(in: .whitespaces).lowercased()
        if let byId = pots.first(where: { $0.id == key }) { return byId }
        let byName = pots.filter { $0.name.lowercased() == key }
        guard byName.count <= 1 else { throw CLIError("\(child.name) has more than one pot named '\(text)'; use the pot's id") }
        guard let pot = byName.first else { throw CLIError("\(child.name) has no pot named or with id '\(text)'; see `kidledger pot list \(child.name)`") }
        return pot
    }

    // MARK: Words

    static func cadence(_ text: String) throws -> ScheduleCadence {
        switch text.lowercased() {
        case "weekly": return .weekly
        case "every-two-weeks", "everytwoweeks", "fortnightly": return .everyTwoWeeks
        case "monthly": return .monthly
        default: throw Arguments.UsageError(description: "--every must be weekly, every-two-weeks or monthly, not '\(text)'")
        }
    }

    static func date(_ text: String, _ option: String) throws -> LocalDate {
        guard let date = LocalDate(text) else { throw Arguments.UsageError(description: "\(option) must be a date YYYY-MM-DD, not '\(text)'") }
        return date
    }

    static func amount(_ text: String) throws -> Int64 {
        do { return try AmountParser.cents(from: text) } catch { throw Arguments.UsageError(description: error.description) }
    }

    /// "1.25" (percent per period) as basis points: 125.
    static func basisPoints(_ text: String) throws -> Int {
        let clean = text.hasSuffix("%") ? String(text.dropLast()) : text
        guard let hundredths = Cents.parse(clean), hundredths > 0, hundredths <= 10_000 else {
            throw Arguments.UsageError(description: "--rate must be a percent per period from 0.01 to 100, not '\(text)'")
        }
        return Int(hundredths)
    }

    static func cadenceWords(_ c: ScheduleCadence) -> String {
        switch c {
        case .weekly: return "weekly"
        case .everyTwoWeeks: return "every two weeks"
        case .monthly: return "monthly"
        }
    }

    static func describe(_ s: Schedule) -> String {
        let what = s.kind == .allowance ? "\(Cents.format(s.amountCents ?? 0)) allowance"
                                        : "\(Cents.format(Int64(s.rateBasisPoints ?? 0)))% interest"
        var text = "\(what) \(cadenceWords(s.cadence)) from \(s.firstDate) (\(s.timeZone))"
        if let end = s.endDate { text += " until \(end)" }
        if s.paused { text += ", paused" }
        return text
    }

    static func goal(_ p: PotSummary) -> String {
        guard p.targetCents != nil || p.targetDate != nil else { return "" }
        var text = "\tgoal"
        if let target = p.targetCents { text += " \(Cents.format(target))" }
        if let date = p.targetDate { text += " by \(date)" }
        if let progress = p.progress { text += " (\(Int((progress * 100).rounded(.down)))%)" }
        return text
    }
}

extension Optional {
    func asyncMap<T>(_ body: (Wrapped) async throws -> T) async rethrows -> T? {
        guard let self else { return nil }
        return try await body(self)
    }
}
