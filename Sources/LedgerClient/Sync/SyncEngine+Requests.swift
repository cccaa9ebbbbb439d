import LedgerModel

/// Requests in the sync: merging the server's version, a child's device uploading its own
/// requests, and what happens to a decision the server did not take.
///
/// The rule for decisions (the same on every replica): **the first decision to reach the
/// server stands.** A later one — an approval after a decline, a decline after an approval, a
/// second approval — is answered with the server's request, which the device adopts; a
/// payment it wrote for a losing approval is dropped. A device never uploads an approval's
/// payment: the server writes it with the decision, under the same id, and the feed brings it,
/// so the one the server holds is the only one anywhere.
extension SyncEngine {
    /// The child this device is paired to, or nil on a parent's device.
    func pairedChild() throws -> String? {
        try store.string(.childModeChildId)
    }

    /// Merges the server's version of a request. `pending`: the server answered a push of ours
    /// with it. A local decision not yet taken by the server stays over a server version that
    /// is still pending; a decided server version wins. Returns false when it is malformed.
    @discardableResult
    func mergeRequest(_ wire: Wire.Request, pending: Bool = false) throws -> Bool {
        guard let server = wire.record() else { return false }
        if let local = try store.request(id: server.id), try pending || store.pendingVersion(.request, id: server.id) != nil {
            if server.status == .pending {
                // Ours (a new request, or a decision) goes up on top of this version.
                try store.setChangeTag(requestId: server.id, server.changeTag)
                return true
            }
            try dropPayment(of: local, decided: server)
        }
        try store.upsert(server)
        try store.dequeue(.request, id: server.id)
        return true
    }

    /// The queued payment of a local approval, once the server decided (`server`; nil: it
    /// refused the decision): never uploaded, since the server writes an approval's payment
    /// itself. Dropped when the server's decision is not an approval; kept until the feed
    /// brings the server's copy (the same id, the amount of the approval that stood) when it is.
    func dropPayment(of local: RequestRecord, decided server: RequestRecord?) throws {
        guard local.status == .approved else { return }
        let payment = local.paymentId ?? RequestRecord.paymentId(of: local.id)
        guard try store.pendingVersion(.transaction, id: payment) != nil else { return }
        if server?.status != .approved { try store.deleteTransaction(id: payment) }
        try store.dequeue(.transaction, id: payment)
    }

    /// The payments of queued approvals: never uploaded (the server writes each with its
    /// decision), so held out of every push.
    func heldPayments() throws -> Set<String> {
        var held = Set<String>()
        for id in try store.pendingIds(.request) {
            if let r = try store.request(id: id), r.status == .approved { held.insert(r.paymentId ?? RequestRecord.paymentId(of: id)) }
        }
        return held
    }

    /// A child's device uploads its new requests one by one through the child's request route
    /// (the one write its token may make), with this device's id for each (a retry is
    /// answered with the same request). A request the server refuses is set aside like any
    /// refused record. Returns true when nothing is left queued.
    func pushChildRequests(childId: String, into report: inout Report) throws -> Bool {
        let householdId = try store.household().id
        for change in try store.pendingChanges(.request) {
            try checkCancelled()
            guard let local = try store.request(id: change.id) else {
                try store.dequeue(.request, id: change.id, ifVersion: change.version)
                continue
            }
            let api = self.api
            let sent = Wire.Request(local)
            var events: [SyncEvent] = []
            do {
                let created = try retrying { () throws(APIError) in try api.createRequest(householdId: householdId, sent) }
                try store.transaction {
                    if let server = created.record(), server.id == local.id, server.childId == childId { try store.upsert(server) }
                    try store.dequeue(.request, id: local.id, ifVersion: change.version)
                }
                report.pushed += 1
            } catch let error as APIError {
                // Only a refusal of this request sets it aside; anything about the device or the
                // server (offline, signed out, the child gone) ends the sync as usual.
                guard case .problem(let status, let code, let detail, _, _) = error, status != 401, status != 404,
                      !error.isTransient else { throw error }
                try store.transaction { try reject(kind: .request, id: local.id, code: code, detail: detail, events: &events) }
                report.rejected += 1
                emit(events)
            }
        }
        // Nothing else is made on a child's device: anything else queued is dropped.
        for kind in RecordKind.allCases where kind != .request {
            for id in try store.pendingIds(kind) { try store.dequeue(kind, id: id) }
        }
        return try store.pendingCount() == 0
    }
}
