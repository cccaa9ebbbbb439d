import Foundation

/// The continuations of a ledger's streams and what each was last sent.
struct Observers {
    var snapshots: [UUID: AsyncStream<LedgerSnapshot>.Continuation] = [:]
    var statuses: [UUID: AsyncStream<SyncStatus>.Continuation] = [:]
    var events: [UUID: AsyncStream<LedgerEvent>.Continuation] = [:]
    var lastSnapshot: LedgerSnapshot?
    var lastStatus: SyncStatus?

    var isEmpty: Bool { snapshots.isEmpty && statuses.isEmpty && events.isEmpty }
}

/// An event waiting in `Ledger.eventQueue`: one a sync reported, or one of the ledger's own.
enum QueuedEvent: Sendable {
    case sync(SyncEvent)
    case ledger(LedgerEvent)
}

extension Ledger {
    /// The current snapshot, then a new one after every change — made here, by a sync, or by
    /// another `Ledger` on the same file (seen within a second). Ends when the iterating task
    /// is cancelled.
    public nonisolated func snapshots() -> AsyncStream<LedgerSnapshot> {
        stream(buffering: 1) { ledger, id, continuation in await ledger.addSnapshotObserver(id, continuation) }
    }

    /// The current status, then every change of it. Ends when the iterating task is cancelled.
    public nonisolated func statusUpdates() -> AsyncStream<SyncStatus> {
        stream(buffering: 1) { ledger, id, continuation in await ledger.addStatusObserver(id, continuation) }
    }

    /// What happened from now on, in the order it happened: remote changes merged, changes
    /// refused, attention needed, syncs failed. Ends when the iterating task is cancelled.
    public nonisolated func events() -> AsyncStream<LedgerEvent> {
        stream(buffering: 64) { ledger, id, continuation in await ledger.addEventObserver(id, continuation) }
    }

    /// A stream keeping the newest `buffering` values, registered with `register` and
    /// unregistered when its consumer goes away.
    private nonisolated func stream<T: Sendable>(
        buffering: Int,
        _ register: @escaping @Sendable (Ledger, UUID, AsyncStream<T>.Continuation) async -> Void
    ) -> AsyncStream<T> {
        let (stream, continuation) = AsyncStream.makeStream(of: T.self, bufferingPolicy: .bufferingNewest(buffering))
        let id = UUID()
        continuation.onTermination = { [weak self] _ in
            Task { await self?.removeObserver(id) }
        }
        Task { await register(self, id, continuation) }
        return stream
    }

    private func addSnapshotObserver(_ id: UUID, _ continuation: AsyncStream<LedgerSnapshot>.Continuation) {
        addObserver(id, continuation, current: { try readSnapshot() }, in: \.snapshots, last: \.lastSnapshot)
    }

    private func addStatusObserver(_ id: UUID, _ continuation: AsyncStream<SyncStatus>.Continuation) {
        addObserver(id, continuation, current: { try readStatus() }, in: \.statuses, last: \.lastStatus)
    }

    /// Sends `continuation` the current value when it reads (then the last one sent), and
    /// registers it under `id`.
    private func addObserver<Value: Sendable>(_ id: UUID, _ continuation: AsyncStream<Value>.Continuation, current: () throws -> Value,
                                    in list: WritableKeyPath<Observers, [UUID: AsyncStream<Value>.Continuation]>,
                                    last: WritableKeyPath<Observers, Value?>) {
        if let value = try? current() {
            continuation.yield(value)
            observers[keyPath: last] = value
        }
        observers[keyPath: list][id] = continuation
        watchIfNeeded()
    }

    private func addEventObserver(_ id: UUID, _ continuation: AsyncStream<LedgerEvent>.Continuation) {
        observers.events[id] = continuation
        watchIfNeeded()
    }

    private func removeObserver(_ id: UUID) {
        observers.snapshots[id] = nil
        observers.statuses[id] = nil
        observers.events[id] = nil
        if observers.isEmpty {
            watcher?.cancel()
            watcher = nil
        }
    }

    /// Sends the current snapshot and status to observers when they changed.
    func publish() async {
        dataVersion = (try? currentDataVersion()) ?? dataVersion
        if !observers.snapshots.isEmpty, let snapshot = try? readSnapshot(), snapshot != observers.lastSnapshot {
            observers.lastSnapshot = snapshot
            for c in observers.snapshots.values { c.yield(snapshot) }
        }
        if !observers.statuses.isEmpty, let status = try? readStatus(), status != observers.lastStatus {
            observers.lastStatus = status
            for c in observers.statuses.values { c.yield(status) }
        }
    }

    /// Queues `event` behind every event that happened before it.
    func emit(_ event: LedgerEvent) {
        eventQueue.yield(.ledger(event))
    }

    /// Hands one queued event to observers (for a sync's, with a fresh snapshot and status).
    func deliver(_ event: QueuedEvent) async {
        switch event {
        case .ledger(let event):
            send(event)
        case .sync(let event):
            await received(event)
        }
    }

    func send(_ event: LedgerEvent) {
        for c in observers.events.values { c.yield(event) }
    }

    /// While anyone observes, looks for commits of other connections to the file (another
    /// `Ledger`, another process) with SQLite's `data_version`, a cheap read.
    private func watchIfNeeded() {
        guard watcher == nil else { return }
        let interval = options.watchInterval
        watcher = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(nanoseconds: UInt64(interval * 1e9))
                guard let self else { return }
                await self.checkForOutsideWrites()
            }
        }
    }

    private func checkForOutsideWrites() async {
        guard let version = try? currentDataVersion(), version != dataVersion else { return }
        await publish()
        // Another ledger on the file (an extension) wrote changes: upload them with ours.
        if scheduler.running, (try? store.pendingCount()) ?? 0 > 0 { perform(scheduler.mutated(now: now())) }
        // It recorded that the server is unreachable: our own sync may still reach it.
        if scheduler.running, case .offline? = try? readStatus() { perform(scheduler.outsideFailure(now: now())) }
    }
}
