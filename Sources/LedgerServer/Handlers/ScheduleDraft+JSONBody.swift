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

    /// `split`: accepted only absent or null — a split needs pots, which come later.
    mutating func noSplit(_ key: String) {
        if let v = object[key], v != .null { fail(key, "is not supported yet: every payment goes to the child's balance") }
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
        noSplit("split")
        if let firstDate, let endDate, endDate < firstDate { fail("endDate", "must not be before firstDate") }
        guard errors.isEmpty, let kind, let cadence, let firstDate, let zone else { return nil }
        return ScheduleDraft(id: id, childId: childId, kind: kind, amountCents: kind == .allowance ? amount ?? 0 : 0,
                             rateBasisPoints: kind == .interest ? rate ?? 0 : 0, note: note ?? "",
                             terms: ScheduleTerms(firstDate: firstDate, cadence: cadence, timeZone: zone, endDate: endDate,
                                                  paused: paused ?? false))
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
        noSplit("split")
        return p
    }
}
