import Foundation
import LedgerCore
import LedgerModel
import HTTPServer

/// Transactions: add/take, idempotent replays, paged history, reversal and undo-last.
enum TransactionRoutes {
    /// The answer to a write: 201 when saved, 200 for a record already there.
    /// The body is written in one pass (the bytes of
    /// `{"transaction": tx.json, "balanceCents": …}` serialized).
    static func result(_ w: TransactionWrite) -> HTTPResponse {
        let tx = w.transaction
        let body = [UInt8](writing: tx.jsonBound + 64) { out in
            out.put(literal: "{\"transaction\":")
            tx.writeJSON(&out, resolvedPotId: PotRecord.resolvedId(of: tx))
            out.put(literal: ",\"balanceCents\":")
            out.putDecimal(w.balanceCents)
            out.put(125)
        }
        let location = String(writing: 38 + tx.householdId.utf8.count + tx.childId.utf8.count) { out in
            out.put(literal: "/v1/households/")
            out.put(utf8: tx.householdId)
            out.put(literal: "/children/")
            out.put(utf8: tx.childId)
            out.put(literal: "/transactions")
        }
        return RequestContext.jsonResponse(w.saved ? 201 : 200, body: body, headers: [("Location", location)])
    }

    static func create(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        let childId = try ctx.id("childId")
        var b = try ctx.body()
        b.allowOnly(["id", "amountCents", "note", "source", "createdAt", "potId"])
        var id = b.uuid("id")
        let potId = b.uuid("potId")
        let fields = NewTransaction.fields(&b, complete: false)
        let key = ctx.request.headers["Idempotency-Key"]
        if var key, key.isEmpty || key.utf8.count > 255 || key.withUTF8({ $0.contains { $0 < 0x21 || $0 > 0x7E } }) {
            b.fail("Idempotency-Key", "must be 1 to 255 visible ASCII characters")
        }
        try b.check()
        guard let fields else { throw APIError.internal() }
        if let skew = NewTransaction.clockSkew("createdAt", fields.createdAt, now: ctx.services.now()) { throw skew }
        let keyed = id == nil ? key : nil
        let chosen = id != nil
        if let keyed { id = LedgerIDs.idempotencyID(accountIdText: c.accountId, key: keyed, sha1: .openSSL)!.lowercased }
        let new = NewTransaction(id: id ?? UUID().lowercased, childId: childId, amountCents: fields.amountCents,
                                 note: fields.note, source: fields.source, createdAt: fields.createdAt, reversesId: nil,
                                 clientChosenId: chosen, potId: potId)
        let lookahead = WriteLookahead(account: c.accountId, transactionId: new.id, child: childId)
        return ctx.write(household: household, lookahead: lookahead, { w in
            do {
                return try w.addTransaction(household: household, author: c.accountId, new, now: ctx.services.now(),
                                            checkingAccess: .write)
            } catch LedgerStorageError.transactionIdTaken(let existing) where keyed != nil {
                // The id was derived from the key: name the key that was used before.
                throw LedgerStorageError.idempotencyKeyReused(key: keyed!, existing: existing)
            }
        }, answer: result)
    }

    static func page(_ ctx: RequestContext, household: String, child: String?) throws -> Reply {
        let c = try ctx.authenticate()
        return try ctx.list("transactions \(household)" + (child.map { " \($0)" } ?? ""), read: { r, before, limit in
            try r.readAccess(household: household, caller: c, child: child)
            if let child, try r.child(household: household, id: child) == nil { throw LedgerStorageError.childNotFound }
            return try r.transactions(household: household, child: child, before: before, limit: limit)
        }, item: \.json)
    }

    static func getOne(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        let txId = try ctx.id("txId")
        let tx = try ctx.read { r in
            try r.readAccess(household: household, caller: c)
            guard let tx = try r.transaction(household: household, id: txId), c.maySee(child: tx.childId)
            else { throw LedgerStorageError.transactionNotFound }
            return tx
        }
        return ctx.json(200, tx.json)
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
        return ctx.write(household: household, { w in try w.reverse(household: household, author: c.accountId, transaction: txId, now: ctx.services.now()) },
                         answer: result)
    }

    static func undoLast(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        let childId = try ctx.id("childId")
        var b = try ctx.optionalBody()
        b.allowOnly(["expectedTransactionId"])
        let expected = b.uuid("expectedTransactionId")
        try b.check()
        return ctx.write(household: household, { w in
            try w.undoLast(household: household, author: c.accountId, child: childId, expected: expected, now: ctx.services.now())
        }, answer: result)
    }
}
