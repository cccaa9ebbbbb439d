/// Group commit with a savepoint per write, written once for both backends: several writes
/// share one transaction and one COMMIT, each as if alone. A write that fails is undone to
/// its savepoint and answered on its own; the others commit. Each backend drives it through
/// a `GroupCommitTransaction` and keeps only what differs: what it locks first, the row
/// writes it holds back, its id index, and how it reads a failure.
@usableFromInline package enum GroupCommit {
    /// What a write's failure means for its batch.
    @usableFromInline package enum Failure: Sendable, Equatable {
        /// Nothing of the batch may be committed (the connection is gone, the disk is full,
        /// the database ended the transaction): the whole batch fails.
        case batch
        /// A refusal the write decided before it changed anything (`WriteRefusal`).
        case refusal
        /// Any other failure of the write alone.
        case write
        /// The write lost a race the database detected: it runs again in a later batch.
        case race
    }

    /// What became of one write.
    @usableFromInline package enum Outcome {
        /// Done; what it changed (durable once the batch commits).
        case succeeded(StorageCommit)
        case failed(any Error)
        /// Not done (it lost a race, or never ran): to run again in a later batch.
        case again
    }

    /// A batch once committed: each write's outcome, and the commit's effects (the
    /// succeeded writes' merged).
    @usableFromInline package struct Committed {
        package var outcomes: [Outcome]
        package var commit: StorageCommit

        @usableFromInline package init(outcomes: [Outcome], commit: StorageCommit) {
            self.outcomes = outcomes
            self.commit = commit
        }
    }

    /// Thrown by a pass without savepoints when a write failed after it changed something.
    @usableFromInline struct NeedsSavepoints: Error {
        @usableFromInline init() {}
    }

    /// Runs `writes` in one transaction of `tx` and commits it; throws (having rolled the
    /// transaction back) when the batch fails as a whole.
    ///
    /// `optimistic`: first without savepoints, which costs nothing while every write that
    /// fails is a refusal that changed nothing; a write that fails otherwise sends the batch
    /// round again, from the start, with a savepoint per write. Nothing of the first round
    /// was committed or answered.
    ///
    /// Inlinable, so that each backend's writer runs it specialized for its transaction.
    @inlinable
    package static func run<Tx: GroupCommitTransaction>(_ writes: [Tx.Write], in tx: Tx, optimistic: Bool) throws -> Committed {
        if optimistic {
            do {
                return try pass(writes, in: tx, savepoints: false)
            } catch is NeedsSavepoints {}
        }
        return try pass(writes, in: tx, savepoints: true)
    }

    @inlinable
    static func pass<Tx: GroupCommitTransaction>(_ writes: [Tx.Write], in tx: Tx, savepoints: Bool) throws -> Committed {
        var outcomes: [Outcome] = []
        outcomes.reserveCapacity(writes.count)
        var commit = StorageCommit()
        do {
            try tx.begin(writes)
            // The write before this one and its savepoint, while a failure may still be
            // charged to it (its last statements travel with this one's first).
            var previous: (index: Int, savepoint: Tx.Savepoint)?
            for (i, write) in writes.enumerated() {
                try tx.prepare(write, index: i, savepoint: savepoints)
                let savepoint = savepoints ? try tx.savepoint() : nil
                let changes = tx.changes
                do {
                    let effects = try tx.run(write)
                    if let savepoint { try tx.release(savepoint) }
                    outcomes.append(.succeeded(effects))
                    previous = savepoint.map { (i, $0) }
                } catch {
                    let (failure, culprit) = tx.judge(error, write: i)
                    if failure == .batch { throw error }
                    guard let savepoint else {
                        if failure != .refusal || tx.changes != changes { throw NeedsSavepoints() }
                        outcomes.append(.failed(error))
                        continue
                    }
                    if culprit != i, let p = previous, p.index == culprit {
                        // The write before failed after all, and this one never ran.
                        try tx.rollBack(to: p.savepoint)
                        outcomes[culprit] = failure == .race ? .again : .failed(error)
                        outcomes.append(.again)
                    } else {
                        try tx.rollBack(to: savepoint)
                        outcomes.append(failure == .race ? .again : .failed(error))
                    }
                    previous = nil
                }
            }
            commit = StorageCommit()
            let authors = tx.queuesWakes
            for case .succeeded(let effects) in outcomes {
                commit.merge(effects, authors: authors)
                commit.writes += 1
            }
            // The push wakes of the batch's changes, in its transaction: durable with them.
            commit.wakesQueued = try tx.queueWakes(for: commit)
            try tx.commit()
        } catch {
            tx.rollBack()
            throw error
        }
        return Committed(outcomes: outcomes, commit: commit)
    }
}

/// One transaction of a group commit, as `GroupCommit` drives it: a backend's connection
/// and what it keeps in memory beside it.
@usableFromInline package protocol GroupCommitTransaction: AnyObject {
    associatedtype Write
    associatedtype Savepoint

    /// Opens the transaction for `writes` (and takes what the backend locks first).
    func begin(_ writes: [Write]) throws
    /// Readies the transaction for `write`, the `index`th, which runs with a savepoint of its
    /// own or not.
    func prepare(_ write: Write, index: Int, savepoint: Bool) throws
    /// Marks where the next write starts, in the database and in memory.
    func savepoint() throws -> Savepoint
    func release(_ savepoint: Savepoint) throws
    /// Undoes all since `savepoint`, in the database and in memory.
    func rollBack(to savepoint: Savepoint) throws
    /// Runs one write; what it changed.
    func run(_ write: Write) throws -> StorageCommit
    /// A count that moves whenever the transaction changes anything: a write without a
    /// savepoint that failed and left it where it was changed nothing.
    var changes: Int { get }
    /// What `error`, thrown while the `index`th write ran, means, and which write it is
    /// charged to (that one, or the one before).
    func judge(_ error: any Error, write index: Int) -> (GroupCommit.Failure, culprit: Int)
    /// Whether `queueWakes` may queue any (push wakes are on): only then does the merged
    /// commit keep who made each household's changes (`StorageCommit.author(of:)`).
    var queuesWakes: Bool { get }
    /// Queues what the batch's merged changes (`commit`) wake (push wakes), inside the
    /// transaction, before COMMIT; how many wakes it queued.
    func queueWakes(for commit: StorageCommit) throws -> Int
    func commit() throws
    /// Rolls the whole transaction back, if it is still open.
    func rollBack()
}

extension GroupCommitTransaction {
    /// By default the merged commit keeps its authors.
    @inlinable package var queuesWakes: Bool { true }
}
