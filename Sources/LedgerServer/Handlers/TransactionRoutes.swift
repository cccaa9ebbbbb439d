import Foundation
import LedgerModel
import SQLiteKit
import HTTPServer

/// Transactions: add/take, idempotent replays, paged history, reversal and undo-last.
enum TransactionRoutes {
    static func register(_ r: inout Router) {
        r.add("POST", "/v1/households/{id}/children/{childId}/transactions", create)
        r.add("GET", "/v1/households/{id}/children/{childId}/transactions", listForChild)
        r.add("GET", "/v1/households/{id}/transactions", listForHousehold)
        r.add("GET", "/v1/households/{id}/transactions/{txId}", getOne)
        r.add("POST", "/v1/households/{id}/transactions/{txId}/reversal", reverse)
        r.add("POST", "/v1/households/{id}/children/{childId}/undo-last", undoLast)
    }

    static func result(_ status: Int, _ tx: LedgerTransaction, _ balance: Int64) -> HTTPResponse {
        RequestContext.jsonResponse(status, .object(["transaction": tx.json, "balanceCents": .int(balance)]),
                                                    headers: [("Location", "/v1/households/\(tx.householdId)/children/\(tx.childId)/transactions")])
    }

    static func create(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        let childId = try ctx.id("childId")
        var b = try ctx.body()
        b.allowOnly(["id", "amountCents", "note", "source", "createdAt"])
        var id = b.uuid("id")
        let fields = LedgerStore.NewTransaction.fields(&b, complete: false)
        let key = ctx.request.headers["Idempotency-Key"]
        if let key, key.isEmpty || key.utf8.count > 255 || key.unicodeScalars.contains(where: { $0.value < 0x21 || $0.value > 0x7E }) {
            b.fail("Idempotency-Key", "must be 1 to 255 visible ASCII characters")
        }
        try b.check()
        guard let fields else { throw APIError.internal() }
        if let skew = LedgerStore.clockSkew([("createdAt", fields.createdAt)], now: Timestamp.nowMs()) { throw skew }
        let keyed = id == nil ? key : nil
        let chosen = id != nil
        if let keyed { id = LedgerIDs.idempotencyID(accountId: LedgerIDs.parse(c.accountId)!, key: keyed).lowercased }
        let new = LedgerStore.NewTransaction(id: id ?? UUID().lowercased, childId: childId, amountCents: fields.amountCents,
                                             note: fields.note, source: fields.source, createdAt: fields.createdAt, reversesId: nil,
                                             clientChosenId: chosen)
        return ctx.write(touching: [household], deferredAnswer: { db in
            _ = try Access.check(db, household: household, account: c.accountId, need: .write)
            return try insert(db, household: household, author: c.accountId, new, idempotencyKey: keyed)
        })
    }

    /// Inserts `new`; the answer is built later, off the writer thread. `idempotencyKey`:
    /// the key `new.id` was derived from, named when it was used before for other content.
    static func insert(_ db: SQLiteConnection, household: String, author: String,
                       _ new: LedgerStore.NewTransaction, idempotencyKey: String? = nil) throws -> @Sendable () -> HTTPResponse {
        do {
            switch try LedgerStore.insertTransaction(db, household: household, author: author, new) {
            case .saved(let tx, let bal): return { result(201, tx, bal) }
            case .unchanged(let tx, let bal): return { result(200, tx, bal) }
            }
        } catch let r as LedgerStore.InsertRefusal {
            if r.code == "unknown_child" { throw APIError.notFound("No such child.") }
            if r.code == "unknown_transaction" { throw APIError.notFound("No such transaction.") }
            var e = r.apiError
            if r.code == "id_conflict", let idempotencyKey {
                e.detail = "Idempotency-Key \"\(idempotencyKey)\" was already used for a different transaction (\(new.id)); "
                    + "use a new key for a new transaction."
            }
            throw e
        }
    }

    static func page(_ ctx: RequestContext, household: String, child: String?) throws -> Reply {
        let c = try ctx.authenticate()
        let limit = try ctx.limit()
        let list = "transactions \(household)" + (child.map { " \($0)" } ?? "")
        let before = try ctx.services.cursors.decode(ctx.request.queryValue("cursor"), list: list)
        return try ctx.services.reads.with { db in
            _ = try Access.check(db, household: household, account: c.accountId, need: .read)
            let rows: [SQLiteRow]
            if let child {
                guard try LedgerStore.findChild(db, household: household, id: child) != nil else { throw APIError.notFound("No such child.") }
                rows = try db.query("SELECT \(LedgerStore.txColumns), n FROM transactions WHERE household_id = ? AND child_id = ? AND n < ? ORDER BY n DESC LIMIT ?",
                                    [.text(household), .text(child), .integer(before ?? Int64.max), .int(limit + 1)])
            } else {
                rows = try db.query("SELECT \(LedgerStore.txColumns), n FROM transactions WHERE household_id = ? AND n < ? ORDER BY n DESC LIMIT ?",
                                    [.text(household), .integer(before ?? Int64.max), .int(limit + 1)])
            }
            let items = rows.prefix(limit)
            let next = rows.count > limit ? ctx.services.cursors.encode(list: list, [items.last!.int(11)]) : nil
            return ctx.json(200, .object(["items": .array(items.map { LedgerStore.transaction($0).json }),
                                          "nextCursor": next.map { .string($0) } ?? .null]))
        }
    }

    static func getOne(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        let txId = try ctx.id("txId")
        return try ctx.services.reads.with { db in
            _ = try Access.check(db, household: household, account: c.accountId, need: .read)
            guard let tx = try LedgerStore.findTransaction(db, household: household, id: txId) else {
                throw APIError.notFound("No such transaction.")
            }
            return ctx.json(200, tx.json)
        }
    }

    static func listForChild(_ ctx: RequestContext) throws -> Reply {
        try ctx.authenticate()
        return try page(ctx, household: ctx.id("id"), child: ctx.id("childId"))
    }

    static func listForHousehold(_ ctx: RequestContext) throws -> Reply {
        try ctx.authenticate()
        return try page(ctx, household: ctx.id("id"), child: nil)
    }

    static func reverse(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        let txId = try ctx.id("txId")
        return ctx.write(touching: [household], deferredAnswer: { db in
            _ = try Access.check(db, household: household, account: c.accountId, need: .write)
            guard let target = try LedgerStore.findTransaction(db, household: household, id: txId) else {
                throw APIError.notFound("No such transaction.")
            }
            if target.reversesId != nil { throw APIError(422, "not_reversible", "A reversal cannot be reversed.") }
            if let by = target.reversedById, let existing = try LedgerStore.findTransaction(db, household: household, id: by) {
                let balance = try LedgerStore.childBalance(db, household: household, id: existing.childId) ?? 0
                return { result(200, existing, balance) }
            }
            return try insert(db, household: household, author: c.accountId, LedgerStore.reversal(of: target))
        })
    }

    static func undoLast(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        let childId = try ctx.id("childId")
        var b = try ctx.optionalBody()
        b.allowOnly(["expectedTransactionId"])
        let expected = b.uuid("expectedTransactionId")
        try b.check()
        return ctx.write(touching: [household], deferredAnswer: { db in
            _ = try Access.check(db, household: household, account: c.accountId, need: .write)
            guard try LedgerStore.findChild(db, household: household, id: childId) != nil else { throw APIError.notFound("No such child.") }
            guard let row = try db.queryOne("""
                SELECT \(LedgerStore.txColumns) FROM transactions
                WHERE household_id = ? AND child_id = ? AND reverses_id IS NULL AND reversed_by_id IS NULL ORDER BY n DESC LIMIT 1
                """, [.text(household), .text(childId)]) else {
                throw APIError(422, "nothing_to_undo", "This child has no transaction left to undo.")
            }
            let target = LedgerStore.transaction(row)
            if let expected, expected != target.id {
                var e = APIError(409, "undo_target_changed", "The newest transaction is \(target.id), not \(expected).")
                e.extra["current"] = target.json
                throw e
            }
            return try insert(db, household: household, author: c.accountId, LedgerStore.reversal(of: target))
        })
    }
}
