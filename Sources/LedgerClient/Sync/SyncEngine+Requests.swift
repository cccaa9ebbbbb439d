import LedgerModel

/// Requests in the sync: merging the server's version, a child's device uploading its own
/// requests, and what happens to a decision the server did not take.
///
/// The rule for decisions (the same on every replica): **the first decision to reach the
/// server stands.** A later one — an approval after a decline, a decline after an approval, a
/// second approval — is answered with the server's request, which the device adopts; a
/// payment it wrote for a losing approval is dropped before it is ever uploaded (an approval's
/// payment is held back until its decision was taken). Two approvals write the same payment id,
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

    /// Drops the queued payment of a local approval that lost to the server's decision (an
    /// approval there too pays with the same id: the upload or the feed settles it).
    func dropPayment(of local: RequestRecord, decided server: RequestRecord?) throws {
        guard local.status == .approved, server?.status != .approved else { return }
        let payment = local.paymentId ?? RequestRecord.paymentId(of: local.id)
        guard try store.pendingVersion(.transaction, id: payment) != nil else { return }
        try store.deleteTransaction(id: payment)
        try store.dequeue(.transaction, id: payment)
    }

    /// The payments of queued decisions: held back until their decision is taken.
    func heldPayments() throws -> Set<String> {
        var held = Set<String>()
        for id in try store.pendingIds(.request) {
            if let r = try store.request(id: id), r.status == .approved { held.insert(r.paymentId ?? RequestRecord.paymentId(of: id)) }
        }
        return held
    }

    /// Uploads the queued requests and decisions through the request routes (API.md "Child
    /// devices and requests"): a request the server has not seen yet (no change tag) with
    /// `POST …/children/{childId}/requests` and this device's id for it, then a decision with
    /// `…/approve` or `…/decline`. The server writes an approval's payment with the same id
    /// as this device did and answers it, which replaces the local one (nothing else is
    /// uploaded for it); `request_decided` (another decision came first) is merged by the rule
    /// above. A request the server refuses is set aside like any refused record; a decision it
    /// refuses leaves the request pending here again, without its payment.
    func pushRequests(into report: inout Report) throws {
        let householdId = try store.household().id
        for change in try store.pendingChanges(.request) {
            try checkCancelled()
            guard var local = try store.request(id: change.id) else {
                try store.dequeue(.request, id: change.id, ifVersion: change.version)
                continue
            }
            let api = self.api
            var events: [SyncEvent] = []
            do {
                if local.changeTag == nil {
                    let sent = Wire.Request(local)
                    let created = try retrying { () throws(APIError) in try api.createRequest(householdId: householdId, sent) }
                    let stillPending = local.status == .pending
                    try store.transaction {
                        guard let server = created.record(), server.id == local.id else { return }
                        if stillPending {
                            try store.upsert(server)
                            try store.dequeue(.request, id: local.id, ifVersion: change.version)
                        } else {
                            try store.setChangeTag(requestId: local.id, server.changeTag ?? "")
                        }
                    }
                    report.pushed += 1
                    guard !stillPending else { continue }
                    local.changeTag = created.changeTag ?? ""
                }
                guard local.status != .pending else {
                    try store.dequeue(.request, id: local.id, ifVersion: change.version)
                    continue
                }
                let approve = local.status == .approved
                let (cents, note) = (local.amountCents, local.decisionNote)
                let decision = try retrying { () throws(APIError) in
                    try api.decide(householdId: householdId, requestId: local.id, approve: approve,
                                   amountCents: approve ? cents : nil, note: approve ? nil : note)
                }
                try store.transaction {
                    if let payment = decision.transaction?.record() {
                        // The server's payment (same id) replaces the one written here.
                        try store.upsert(payment)
                        try store.dequeue(.transaction, id: payment.id)
                    }
                    if let server = decision.request.record() {
                        try store.upsert(server)
                        try store.dequeue(.request, id: server.id, ifVersion: change.version)
                    }
                }
                report.pushed += 1
            } catch let error as APIError {
                guard case .problem(let status, let code, let detail, _, let members) = error, status != 401,
                      !error.isTransient else { throw error }
                if code == "request_decided", let current = members.current {
                    report.conflicts += 1
                    try store.transaction { _ = try mergeRequest(current, pending: true) }
                    continue
                }
                // A child's device whose child is gone (404) ends the sync like a deleted household.
                if status == 404, try pairedChild() != nil { throw error }
                try store.transaction { try reject(kind: .request, id: local.id, code: code, detail: detail, events: &events) }
                report.rejected += 1
                emit(events)
            }
        }
    }
}
