import Foundation
import LedgerCore
import LedgerModel

/// Reading a schedule's fields from a request body (a POST, a pushed record, a PATCH), with
/// a field-level message for each refusal.
extension JSONBody {
    /// The largest rate an interest schedule may pay per period: 10,000 basis points (100 %).
    static let maxRateBasisPoints: Int64 = 10_000

    /// A string member that must be one of `E`'s raw values.
    mutating func oneOf<E: RawRepresentable & CaseIterable>(_ key: String, required: Bool) -> E? where E.RawValue == String {
        guard let s = string(key, required: required) else { return nil }
        guard let v = E(rawValue: s) else {
            fail(key, "must be one of " + E.allCases.map(\.rawValue).joined(separator: ", "))
            return nil
        }
        return v
    }

    mutating func localDate(_ key: String, required: Bool) -> LocalDate? {
        guard let s = string(key, required: required) else { return nil }
        guard let d = LocalDate(s) else { fail(key, "must be a date YYYY-MM-DD"); return nil }
        return d
    }

    mutating func timeZone(_ key: String, required: Bool) -> ScheduleTimeZone? {
        guard let s = string(key, required: required) else { return nil }
        do { return try ScheduleTimeZone(identifier: s) } catch { fail(key, error.description); return nil }
    }

    mutating func allowanceAmount(_ key: String) -> Int64? {
        guard let a = int(key) else { return nil }
        if a <= 0 || a > Cents.maxTransactionMagnitude { fail(key, "must be from 1 to \(Cents.maxTransactionMagnitude)"); return nil }
        return a
    }

    mutating func rateBasisPoints(_ key: String) -> Int64? {
        guard let r = int(key) else { return nil }
        if r <= 0 || r > JSONBody.maxRateBasisPoints { fail(key, "must be from 1 to \(JSONBody.maxRateBasisPoints)"); return nil }
        return r
    }

    mutating func scheduleNote(_ key: String) -> String? {
        guard let n = string(key) else { return nil }
        if case .failure(let e) = Validation.note(n) { fail(key, e.message); return nil }
        return n
    }

    /// `split`: `[{potId, percent}]` (`Cents.split`'s rules: whole percents from 1 to 100, each
    /// pot once, adding up to 100). nil: absent; `.some(nil)`: null (no split).
    mutating func scheduleSplit(_ key: String) -> [SchedulePart]?? {
        guard let v = object[key] else { return nil }
        guard v != .null else { return .some(nil) }
        guard case .array(let items) = v, !items.isEmpty, items.count <= 100 else {
            fail(key, "must be an array of 1 to 100 {potId, percent}, or null"); return nil
        }
        var parts: [SchedulePart] = []
        for item in items {
            guard case .object(let o) = item, o.pairs.allSatisfy({ $0.0 == "potId" || $0.0 == "percent" }),
                  case .string(let raw)? = o["potId"], let pot = LedgerIDs.lowercaseCanonical(raw),
                  case .int(let percent)? = o["percent"] else {
                fail(key, "each part must be {potId: a UUID, percent: an integer}"); return nil
            }
            parts.append(SchedulePart(potId: pot, percent: Int(clamping: percent)))
        }
        let percents = parts.map { (potId: UUID(uuidString: $0.potId)!, percent: $0.percent) }
        do {
            _ = try Cents.split(amountCents: 100, percents: percents)
        } catch {
            fail(key, error.description); return nil
        }
        return .some(parts)
    }

    /// A whole schedule: `{kind, amountCents | rateBasisPoints, cadence, firstDate, timeZone,
    /// endDate?, note?, paused?, split?}`, with `id` and `childId` given.
    mutating func scheduleDraft(id: String, childId: String) -> ScheduleDraft? {
        let kind: ScheduleKind? = oneOf("kind", required: true)
        let amount = allowanceAmount("amountCents"), rate = rateBasisPoints("rateBasisPoints")
        switch kind {
        case .allowance?:
            if amount == nil, errors["amountCents"] == nil { fail("amountCents", "is required for an allowance") }
            if has("rateBasisPoints"), object["rateBasisPoints"] != .null { fail("rateBasisPoints", "is for interest only") }
        case .interest?:
            if rate == nil, errors["rateBasisPoints"] == nil { fail("rateBasisPoints", "is required for interest") }
            if has("amountCents"), object["amountCents"] != .null { fail("amountCents", "is for an allowance only") }
        case nil: break
        }
        let cadence: ScheduleCadence? = oneOf("cadence", required: true)
        let firstDate = localDate("firstDate", required: true), endDate = localDate("endDate", required: false)
        let zone = timeZone("timeZone", required: true)
        let note = scheduleNote("note")
        let paused = bool("paused")
        let split = scheduleSplit("split") ?? nil
        if let firstDate, let endDate, endDate < firstDate { fail("endDate", "must not be before firstDate") }
        guard errors.isEmpty, let kind, let cadence, let firstDate, let zone else { return nil }
        return ScheduleDraft(id: id, childId: childId, kind: kind, amountCents: kind == .allowance ? amount ?? 0 : 0,
                             rateBasisPoints: kind == .interest ? rate ?? 0 : 0, note: note ?? "",
                             terms: ScheduleTerms(firstDate: firstDate, cadence: cadence, timeZone: zone, endDate: endDate,
                                                  paused: paused ?? false),
                             split: split)
    }

    /// A PATCH: `{amountCents?, rateBasisPoints?, note?, cadence?, firstDate?, timeZone?,
    /// endDate? (null removes it), paused?, backPay?}`.
    mutating func schedulePatch() -> SchedulePatch {
        var p = SchedulePatch()
        p.amountCents = allowanceAmount("amountCents")
        p.rateBasisPoints = rateBasisPoints("rateBasisPoints")
        p.note = scheduleNote("note")
        p.cadence = oneOf("cadence", required: false)
        p.firstDate = localDate("firstDate", required: false)
        p.timeZone = timeZone("timeZone", required: false)
        if let v = object["endDate"] { p.endDate = v == .null ? .some(nil) : localDate("endDate", required: false).map { .some($0) } }
        p.paused = bool("paused")
        p.backPay = bool("backPay") ?? false
        p.split = scheduleSplit("split")
        return p
    }
}
