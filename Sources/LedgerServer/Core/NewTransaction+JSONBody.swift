import LedgerCore
import LedgerModel

extension NewTransaction {
    /// A transaction's client-written fields, checked once for both the REST create and
    /// the sync push.
    struct Fields {
        var amountCents: Int64
        var note: String
        var source: TransactionSource
        var createdAt: Int64?
    }

    /// Reads `amountCents`, `note`, `source` and `createdAt` from `b` with API.md's rules;
    /// field errors go into `b`. `complete`: a pushed record, where every one is required
    /// (the REST create defaults `note` to "", `source` to `api` and `createdAt` to now).
    /// nil when a field is missing or invalid.
    /// `reversal`: the record reverses another, whose source it repeats, so `interest` is
    /// taken there (a device undoing an interest payment).
    static func fields(_ b: inout JSONBody, complete: Bool, reversal: Bool = false) -> Fields? {
        let amount = b.int("amountCents", required: true)
        if let a = amount, case .failure(let e) = Validation.amount(a) { b.fail("amountCents", e.message) }
        let note = b.string("note", required: complete)
        if let note, case .failure(let e) = Validation.note(note) { b.fail("note", e.message) }
        var source: TransactionSource? = complete ? nil : .api
        if let s = b.string("source", required: complete) {
            source = TransactionSource(rawValue: s)
            if source == nil { b.fail("source", "must be one of " + TransactionSource.allCases.map(\.rawValue).joined(separator: ", ")) }
            // Interest depends on the balance at its due instant: only the server pays it.
            if source == .interest, !reversal { b.fail("source", "interest is paid by the server only") }
        }
        let createdAt = b.timestamp("createdAt", required: complete)
        guard b.errors.isEmpty, let amount, let source, complete ? (note != nil && createdAt != nil) : true else { return nil }
        return Fields(amountCents: amount, note: note ?? "", source: source, createdAt: createdAt)
    }
}
