import Foundation
import LedgerModel

/// Children's requests on the device: made by the child's device or a parent, decided by a
/// parent, offline like every mutation. An approval writes its payment with the id
/// `UUIDv5(N, "request:" + requestId)` in the same local transaction, so two parents approving
/// the same request pay it once wherever they did it.
extension LedgerService {
    /// The child this device is paired to, or nil on a parent's device.
    func pairedChild() throws -> String? {
        try store.string(.childModeChildId)
    }

    /// Makes a request for `childId`: on a child's device only for its own child.
    @discardableResult
    func makeRequest(childId: String, kind: RequestRecord.Kind, cents: Int64, note: String,
                     id: String = UUID().lowercased) throws -> RequestRecord {
        try Self.checkRequestAmount(cents)
        let clean = try Self.cleanNote(note)
        return try store.transaction {
            let paired = try pairedChild()
            if let paired {
                guard paired == childId else { throw ClientError.childDevice }
                let phase = try store.phase()
                if phase.queuesChanges, let reason = try store.attention() { throw ClientError.frozen(reason) }
            } else {
                try checkWritable()
                guard try store.child(id: childId) != nil else { throw ClientError.childNotFound(childId) }
            }
            let t = now()
            let request = RequestRecord(id: id, childId: childId, kind: kind, amountCents: cents, requestedCents: cents, note: clean, status: .pending,
                                        createdBy: paired == nil ? try author() : nil, createdAt: t, modifiedAt: t)
            try store.upsert(request)
            try queue(.request, request.id)
            return request
        }
    }

    /// Approves (with `cents`, another amount, when given) or declines (with `note`) a pending
    /// request. Approving writes the payment. Deciding again as it was decided returns the
    /// request as it is; the other decision of a decided request is refused.
    @discardableResult
    func decide(requestId: String, approve: Bool, cents: Int64? = nil, note: String? = nil) throws -> RequestRecord {
        if let cents { try Self.checkRequestAmount(cents) }
        let cleanNote = try note.map(Self.cleanNote)
        return try store.transaction {
            if try pairedChild() != nil { throw ClientError.childDevice }
            try checkWritable()
            guard var request = try store.request(id: requestId.lowercased()) else { throw ClientError.requestNotFound(requestId) }
            switch (request.status, approve) {
            case (.approved, true), (.declined, false): return request
            case (.approved, false), (.declined, true): throw ClientError.requestDecided(request.status.rawValue)
            case (.pending, _): break
            }
            let t = now()
            request.status = approve ? .approved : .declined
            request.decidedBy = try author()
            request.decidedAt = t
            request.modifiedAt = t
            if approve {
                if let cents { request.amountCents = cents }
                let paymentId = RequestRecord.paymentId(of: request.id)
                request.paymentId = paymentId
                if try store.transaction(id: paymentId) == nil {
                    _ = try record(childId: request.childId, amount: request.paymentCents, note: request.note,
                                   source: TransactionSource.api.rawValue, id: paymentId, reverses: nil, createdAt: t)
                }
            } else {
                request.decisionNote = cleanNote
            }
            try store.upsert(request)
            try queue(.request, request.id)
            return request
        }
    }

    private static func checkRequestAmount(_ cents: Int64) throws {
        guard cents > 0 else { throw ClientError.invalid(field: "amount", message: "must be more than zero") }
        guard cents <= Cents.maxTransactionMagnitude else {
            throw ClientError.invalid(field: "amount", message: "must be at most 1000000000.00")
        }
    }

    private static func cleanNote(_ note: String) throws -> String {
        switch Validation.note(note) {
        case .success(let n): return n
        case .failure(let e): throw ClientError.invalid(field: "note", message: e.message)
        }
    }
}
