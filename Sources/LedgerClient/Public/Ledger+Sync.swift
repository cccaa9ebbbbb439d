import Foundation
import LedgerModel

extension Ledger {
    /// Brings this ledger and the server together now: uploads pending changes, then fetches
    /// and merges what other devices did. Cancelling the calling task stops it within a second;
    /// every step is its own local transaction, so the ledger stays consistent.
    @discardableResult
    public func syncNow() async throws -> SyncReport {
        try await runSync(lane: .push, wait: 0)
    }

    /// A push notification said something changed on the server: fetch now (in the background).
    public func remoteNotificationReceived() async {
        if scheduler.running {
            perform(scheduler.remoteNotification(now: now()))
        } else {
            Task { _ = try? await self.syncNow() }
        }
    }

    /// Keeps this ledger in sync while the app runs: uploads a few milliseconds after each
    /// change, keeps a long-poll open so other devices' changes arrive at once, and backs off
    /// (exponentially, with jitter) while the server cannot be reached.
    public func startAutomaticSync() async {
        startAllowanceTimer()
        perform(scheduler.start(now: now()))
    }

    /// Stops automatic sync; a sync in flight is abandoned (the ledger stays consistent).
    public func stopAutomaticSync() async {
        stopAllowanceTimer()
        perform(scheduler.stop(now: now()))
    }

    /// True while automatic sync runs.
    public var isAutomaticSyncRunning: Bool { scheduler.running }

    // MARK: Running syncs

    /// Runs one sync on `lane` and tells observers and the scheduler how it went.
    func runSync(lane: SyncScheduler.Lane, wait: Int) async throws -> SyncReport {
        let lanes = try syncLanes()
        // What fell due is paid before the push, so it goes up with it.
        await payDueAllowances()
        let token = await currentToken()
        signedOut = token == nil
        let before = try? readSyncMarks()
        let counted = lane == .push
        if counted { syncing += 1; await publish() }
        let retry = lane == .live ? RetryPolicy(maxAttempts: 1) : options.retry
        do {
            let report = try await (lane == .live ? lanes.live : lanes.push).run(token: token, retry: retry) { engine in
                try engine.sync(wait: wait)
            }
            if counted { syncing -= 1 }
            try? setMeta(.offlineSince, nil)
            await afterSync(before: before, report: report, failure: nil)
            // A push registration made offline, or for an earlier token, catches up.
            if lane == .push, meta(.pushKey) != nil, meta(.pushRegisteredTokenId) != meta(.tokenId) { await registerPushQuietly() }
            return SyncReport(report)
        } catch {
            if counted { syncing -= 1 }
            let failure = LedgerError(error)
            if failure == .offline, meta(.offlineSince) == nil {
                try? setMeta(.offlineSince, String(Date().ms))
            }
            await afterSync(before: before, report: nil, failure: failure)
            throw failure
        }
    }

    /// What a sync is compared against to find out what it changed.
    struct SyncMarks {
        var attention: AttentionReason?
    }

    func readSyncMarks() throws -> SyncMarks {
        SyncMarks(attention: try store.attention())
    }

    private func afterSync(before: SyncMarks?, report: SyncEngine.Report?, failure: LedgerError?) async {
        if let before, let reason = (try? readSyncMarks())?.attention, reason != before.attention {
            emit(.attentionRequired(reason))
        }
        if let failure, failure != .cancelled { emit(.syncFailed(failure)) }
        await publish()
    }

    /// What the engine reported from a lane: remote changes, refused changes, unreadable records.
    func received(_ event: SyncEvent) async {
        switch event {
        case .remoteChanges(let children, let transactions):
            send(.remoteChanges(children: children, transactions: transactions))
        case .rejected(let record):
            send(.rejected(RejectedChange(record)))
        case .unmerged:
            send(.attentionRequired(.unreadableChanges))
        }
        await publish()
    }

    // MARK: Automatic sync

    /// Carries out what the scheduler decided.
    func perform(_ actions: [SyncScheduler.Action]) {
        for action in actions {
            switch action {
            case .startLive(let wait):
                laneTasks[.live] = Task { await self.runScheduled(.live, wait: wait) }
            case .startPush:
                laneTasks[.push] = Task { await self.runScheduled(.push, wait: 0) }
            case .cancelAll:
                for task in laneTasks.values { task.cancel() }
                laneTasks = [:]
            case .wake(let at):
                timer?.cancel()
                timer = nil
                guard let at else { continue }
                let delay = max(0, at - now())
                timer = Task {
                    try? await Task.sleep(nanoseconds: UInt64(delay * 1e9))
                    if Task.isCancelled { return }
                    self.tick()
                }
            }
        }
    }

    private func tick() {
        perform(scheduler.tick(now: now()))
    }

    private func runScheduled(_ lane: SyncScheduler.Lane, wait: Int) async {
        let outcome: SyncScheduler.Outcome
        do {
            _ = try await runSync(lane: lane, wait: wait)
            outcome = .success
        } catch let error as LedgerError {
            switch error {
            case .cancelled: outcome = .cancelled
            case .offline, .server, .store: outcome = .transientFailure
            default: outcome = .permanentFailure
            }
        } catch {
            outcome = .transientFailure
        }
        perform(scheduler.finished(lane, outcome, now: now()))
    }

    // MARK: Server calls

    /// Runs `body` on the push lane with this device's token (or `token`) and maps failures.
    func onServer<T: Sendable>(token: String?? = .none, retry: RetryPolicy? = nil,
                               _ body: @escaping @Sendable (SyncEngine) throws -> T) async throws -> T {
        let lanes = try syncLanes()
        let signedIn: String?
        switch token {
        case .some(let given): signedIn = given
        case .none: signedIn = await currentToken()
        }
        do {
            let value = try await lanes.push.run(token: signedIn, retry: retry ?? options.retry, body)
            await publish()
            return value
        } catch {
            await publish()
            throw LedgerError(error)
        }
    }
}

extension SyncReport {
    init(_ r: SyncEngine.Report) {
        self.init(pushed: r.pushed, pulledChildren: r.pulledChildren, pulledTransactions: r.pulledTransactions,
                  conflicts: r.conflicts, rejected: r.rejected)
    }
}
