/// A cancellation signal shared by a sync and the requests it sends.
final class SyncCancellation: Sendable {
    private let flag = Locked(false)
    init() {}
    func cancel() { flag.withLock { $0 = true } }
    var isCancelled: Bool { flag.withLock { $0 } }
}

extension SyncEngine {
    var cancellation: SyncCancellation? {
        get { nil }
        set {}
    }
}
