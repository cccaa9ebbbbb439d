import Foundation
import GzipKit
import LedgerModel

/// Writes the whole local ledger as gzip-compressed JSON and restores it into an empty store.
struct LedgerExporter {
    let store: LedgerStore

    init(store: LedgerStore) { self.store = store }

    /// The export document (format `kidledger-export`, version 1).
    struct Document: Codable, Sendable, Equatable {
        var format: String
        var version: Int
        var exportedAt: String
        var household: Household
        var children: [Wire.PushChild]
        var transactions: [Wire.PushTransaction]
        /// Absent in exports made before schedules and pots.
        var pots: [Wire.Pot]?
        var schedules: [Wire.Schedule]?
        /// Absent in exports made before requests.
        var requests: [Wire.Request]?

        struct Household: Codable, Sendable, Equatable {
            var id: String
            var name: String
            var currency: String
        }
    }

    /// A file name next to the store: `<store>-export-<ms>.json.gz`.
    static func defaultPath(nextTo storePath: String, now: Int64) -> String {
        let base = storePath == ":memory:" ? "kidledger" : storePath
        return "\(base)-export-\(now).json.gz"
    }

    /// The current ledger as an export document.
    func document(now: Int64) throws -> Document {
        let h = try store.household()
        return Document(format: "kidledger-export", version: 1, exportedAt: Timestamp.format(ms: now),
                        household: .init(id: h.id, name: h.name, currency: h.currency),
                        children: try store.children().map { var c = Wire.PushChild($0); c.baseChangeTag = nil; return c },
                        transactions: try store.allTransactions().map(Wire.PushTransaction.init),
                        pots: try store.pots().map { var p = Wire.Pot($0); p.baseChangeTag = nil; return p },
                        schedules: try store.schedules(includeDeleted: true).map { var s = Wire.Schedule($0); s.baseChangeTag = nil; return s },
                        requests: try store.requests().reversed().map(Wire.Request.exported))
    }

    /// An imported schedule pays from the first date after the newest payment the export
    /// holds (or from its first date), so the import neither pays twice nor skips a date.
    private func resumingPayments(_ s: ScheduleRecord, now: Int64) throws -> ScheduleRecord {
        var schedule = s
        schedule.termsFrom = s.firstDate
        schedule.lastSettled = try store.newestPaymentDate(of: s, nowMs: now)
        return schedule
    }

    /// Writes the export to `path` atomically (temporary file, then rename).
    func export(to path: String, now: Int64) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = try encoder.encode(try document(now: now))
        let gz = try Gzip.compress(Array(json))
        let url = URL(fileURLWithPath: path)
        do { try Data(gz).write(to: url, options: .atomic) } catch {
            throw ClientError.storage("cannot write \(path): \(error.localizedDescription)")
        }
    }

    /// Restores an export into this store, which must be local-only and hold no records.
    /// Returns the counts imported.
    @discardableResult
    func importFile(_ path: String, now: Int64) throws -> (children: Int, transactions: Int) {
        guard let data = FileManager.default.contents(atPath: path) else { throw ClientError.invalidExport("cannot read \(path)") }
        let json: [UInt8]
        do { json = try Gzip.decompress(Array(data), limit: 256 << 20) } catch { throw ClientError.invalidExport("not gzip data") }
        let doc: Document
        do { doc = try JSONDecoder().decode(Document.self, from: Data(json)) } catch {
            throw ClientError.invalidExport("unreadable JSON")
        }
        guard doc.format == "kidledger-export", doc.version == 1 else { throw ClientError.invalidExport("unknown format") }
        return try store.transaction {
            let counts = try store.counts()
            guard try store.phase() == .localOnly, counts.children == 0, counts.transactions == 0 else {
                throw ClientError.importNeedsEmptyStore
            }
            var h = try store.household()
            h.id = doc.household.id.lowercased(); h.name = doc.household.name; h.currency = doc.household.currency
            try store.saveHousehold(h, now: now)
            for c in doc.children {
                guard let created = Timestamp.parse(c.createdAt), let modified = Timestamp.parse(c.modifiedAt) else {
                    throw ClientError.invalidExport("child \(c.id) has a malformed timestamp")
                }
                try store.upsert(ChildRecord(id: c.id.lowercased(), name: c.name, sortOrder: c.sortOrder, archived: c.archived,
                                             createdAt: created, modifiedAt: modified, modifiedBy: c.modifiedBy))
            }
            let ordered = doc.transactions.sorted { ($0.reversesId == nil ? 0 : 1) < ($1.reversesId == nil ? 0 : 1) }
            for t in ordered {
                guard let created = Timestamp.parse(t.createdAt) else { throw ClientError.invalidExport("transaction \(t.id) has a malformed timestamp") }
                guard try store.child(id: t.childId.lowercased()) != nil else {
                    throw ClientError.invalidExport("transaction \(t.id) names an unknown child")
                }
                if let r = t.reversesId, try store.transaction(id: r.lowercased()) == nil {
                    throw ClientError.invalidExport("reversal \(t.id) of an unknown transaction")
                }
                try store.upsert(TransactionRecord(id: t.id.lowercased(), childId: t.childId.lowercased(), amountCents: t.amountCents,
                                                   note: t.note, source: t.source, createdAt: created, reversesId: t.reversesId?.lowercased(),
                                                   potId: Wire.Transaction.localPot(t.potId, childId: t.childId)))
            }
            for p in doc.pots ?? [] {
                guard let pot = p.record(), try store.child(id: pot.childId) != nil else {
                    throw ClientError.invalidExport("pot \(p.id) is malformed or names an unknown child")
                }
                try store.upsert(pot)
            }
            for s in doc.schedules ?? [] {
                guard let schedule = s.record(), try store.child(id: schedule.childId) != nil else {
                    throw ClientError.invalidExport("schedule \(s.id) is malformed or names an unknown child")
                }
                try store.upsert(resumingPayments(schedule, now: now))
            }
            for r in doc.requests ?? [] {
                guard var request = r.record(), try store.child(id: request.childId) != nil else {
                    throw ClientError.invalidExport("request \(r.id) is malformed or names an unknown child")
                }
                request.changeTag = nil
                try store.upsert(request)
            }
            return (doc.children.count, doc.transactions.count)
        }
    }
}
