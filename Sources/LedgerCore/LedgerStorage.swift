import Dispatch
import LedgerModel

/// The server's storage seam. Two conformers sit behind it: SQLite (the embedded default,
/// one process, one writer thread with group commit) and PostgreSQL (several stateless
/// processes over one database). It speaks domain types and `LedgerStorageError`s only:
/// no SQL, no database types and no HTTP statuses cross it.
///
/// Work is scoped. `read` runs its body against one consistent snapshot. `write` runs its
/// body inside a write transaction and calls back once the transaction is durable (or
/// failed; a failed body leaves nothing behind). Inside a write, the first operation on a
/// household locks that household's change-sequence row, before anything else of it is
/// read or written, so per-household change order is commit order and a feed reader can
/// never step over a change that commits late.
///
/// The ledger's rules (idempotent inserts, reversals, undo, access, the feed's paging)
/// are written once, over the primitive operations of `LedgerReading`/`LedgerWriting`
/// (see `LedgerWriting+Rules.swift`, `LedgerReading+Rules.swift`).
package protocol LedgerStorage: Sendable {
    /// Whether answers read from it may be kept until this process's next commit: only
    /// when this process is the database's one writer (SQLite). With several processes a
    /// commit elsewhere would leave a kept answer stale.
    var cachesReads: Bool { get }

    /// Whether an answer about one household may be kept while the household's stamp
    /// (`readStamps`) stays what it was before the answer was read (PostgreSQL: every process
    /// asks the database for the stamp, one row, before it serves a kept answer). False by
    /// default.
    var stampsReads: Bool { get }

    /// The `HouseholdReadStamp` of each household as its account sees it, in order (nil: no
    /// such household), read in one statement of their own (one round trip). Only where
    /// `stampsReads`.
    func readStamps(_ wanted: [(household: String, account: String)]) throws -> [HouseholdReadStamp?]

    /// Whether writes are failing for lack of space (and will until there is room again).
    var isOutOfSpace: Bool { get }

    /// Whether it can serve now.
    func readiness() -> StorageReadiness

    /// Whether commits queue push wakes (`LedgerWriting.queuePushWakes(for:now:)`); off by
    /// default, on while a push gateway is configured.
    var pushWakes: PushWakeSwitch { get }

    /// Runs `body` on the calling thread against one snapshot.
    func read<T>(_ body: (any LedgerReading) throws -> T) throws -> T

    /// Runs `body` in a write transaction; `completion` gets its value once the
    /// transaction is durable, or the error (a `LedgerStorageError`, or what `body` threw).
    ///
    /// - Parameters:
    ///   - household: the one household `body` locks, when it keeps to one: such writes may
    ///     share a transaction (group commit), each as if alone (a refused one leaves
    ///     nothing). nil: a body that may touch anything.
    ///   - executor: where `completion` runs: storage hands it over from the thread that
    ///     committed as soon as the write is durable. nil: a thread of storage's choosing.
    func write<T: Sendable>(household: String?, answeringOn executor: (any WriteCompletionExecutor)?,
                            _ body: @escaping @Sendable (any LedgerWriting) throws -> T,
                            completion: @escaping @Sendable (Result<T, any Error>) -> Void)
    /// `write(household:answeringOn:_:completion:)` of a body whose first lookup is
    /// `lookahead`'s: a backend that pays a round trip per lookup may read it ahead,
    /// together with those of the other writes it commits with. A hint: the default ignores it.
    func write<T: Sendable>(household: String, lookahead: WriteLookahead, answeringOn executor: (any WriteCompletionExecutor)?,
                            _ body: @escaping @Sendable (any LedgerWriting) throws -> T,
                            completion: @escaping @Sendable (Result<T, any Error>) -> Void)
    /// A write whose caller waits for it on its own thread (a worker that verified a token,
    /// the revocation outbox). Over SQLite it is a job of the writer's group commit, like
    /// any write (the default); over PostgreSQL it runs right there, since a worker waiting
    /// for a write queued to the workers could wait for itself.
    func writeHere<T: Sendable>(_ body: @escaping @Sendable (any LedgerWriting) throws -> T) throws -> T
    /// A write of background work (the schedule job's) that gives way to requests' writes:
    /// over SQLite the writer runs it in a commit of its own, and only when no request's
    /// write is queued. By default (PostgreSQL, where a write that names no household runs
    /// on a worker, beside the committers) `write(household: nil, …)`.
    func backgroundWrite<T: Sendable>(_ body: @escaping @Sendable (any LedgerWriting) throws -> T,
                                      completion: @escaping @Sendable (Result<T, any Error>) -> Void)
    /// Seconds since a request's write last reached the one writer that background writes
    /// share with requests (SQLite's), so background work can size its writes to the
    /// traffic; nil: no such writer, or none yet (the default; over PostgreSQL background
    /// writes run beside the committers).
    func secondsSinceRequestWrite() -> Double?
    /// How many households one background write may pay together (the schedule job's
    /// catch-up, `LedgerWriting.payDue(households:now:)`): over a backend whose commits and
    /// statements are round trips to another process (PostgreSQL) several, so a catch-up
    /// pays a fraction of the commits and statements; 1 (the default) where a write is a
    /// commit of the process's own writer (SQLite), whose requests' writes wait for it.
    var householdsPerBackgroundWrite: Int { get }
}

/// A thread with a queue of its own that takes a write's outcome (a connection's event
/// loop, which builds the answer and writes it).
package protocol WriteCompletionExecutor: Sendable {
    /// Queues `work` there; never blocks, never runs a long task on the caller.
    func execute(_ work: @escaping @Sendable () -> Void)
}

/// What a write about one household looks up first: the caller's access to the household,
/// whether a transaction id is free, and a child's balance
/// (`LedgerWriting.accessAndTransaction(household:account:id:reversalId:child:)`, the first
/// read of a new transaction).
package struct WriteLookahead: Sendable {
    package var account: String
    package var transactionId: String
    package var child: String

    package init(account: String, transactionId: String, child: String) {
        self.account = account
        self.transactionId = transactionId
        self.child = child
    }
}

extension LedgerStorage {
    package var stampsReads: Bool { false }

    package func readStamps(_ wanted: [(household: String, account: String)]) throws -> [HouseholdReadStamp?] {
        Array(repeating: nil, count: wanted.count)
    }

    package func write<T: Sendable>(household: String, lookahead: WriteLookahead,
                                    answeringOn executor: (any WriteCompletionExecutor)?,
                                    _ body: @escaping @Sendable (any LedgerWriting) throws -> T,
                                    completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        write(household: household, answeringOn: executor, body, completion: completion)
    }

    package func writeHere<T: Sendable>(_ body: @escaping @Sendable (any LedgerWriting) throws -> T) throws -> T {
        try writeAndWait(body)
    }

    package func backgroundWrite<T: Sendable>(_ body: @escaping @Sendable (any LedgerWriting) throws -> T,
                                              completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        write(household: nil, answeringOn: nil, body, completion: completion)
    }

    package func secondsSinceRequestWrite() -> Double? { nil }

    package var householdsPerBackgroundWrite: Int { 1 }

    /// Ready unless writes fail for lack of space or a read of the database fails.
    package func readiness() -> StorageReadiness {
        if isOutOfSpace { return .outOfSpace }
        return (try? read { try $0.schemaVersion() }) == nil ? .notAnswering(transient: false) : .ready
    }

    /// `write` of a body that may touch anything, answered on a thread of storage's choosing.
    package func write<T: Sendable>(_ body: @escaping @Sendable (any LedgerWriting) throws -> T,
                                    completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        write(household: nil, answeringOn: nil, body, completion: completion)
    }

    /// `write` of a body that locks no household but `household`, answered on a thread of
    /// storage's choosing.
    package func write<T: Sendable>(household: String, _ body: @escaping @Sendable (any LedgerWriting) throws -> T,
                                    completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        write(household: household, answeringOn: nil, body, completion: completion)
    }

    /// `write`, waiting for the outcome on the calling thread (admin commands, tests).
    package func writeAndWait<T: Sendable>(_ body: @escaping @Sendable (any LedgerWriting) throws -> T) throws -> T {
        let box = ResultBox<T>()
        let done = DispatchSemaphore(value: 0)
        write(body) { result in box.set(result); done.signal() }
        done.wait()
        return try box.get()
    }
}

/// What a body may read, all inside one snapshot (or one write transaction).
package protocol LedgerReading: AccountAccessReading, ChildDeviceReading {
    // MARK: accounts and tokens
    /// The caller a token hash stands for, when the token exists and is not revoked.
    func caller(tokenHash: [UInt8]) throws -> Caller?
    func account(id: String) throws -> AccountRecord?
    func accountId(handle: String) throws -> String?
    func token(id: String) throws -> TokenRecord?
    /// The account's tokens that are not revoked, oldest first (by creation time, then
    /// id), after the position `after`.
    func activeTokens(account: String, after: TimeAndIdPosition?, limit: Int) throws -> KeyedPage<TokenRecord, TimeAndIdPosition>
    /// How many tokens of the account are not revoked (for the per-account cap).
    func activeTokenCount(account: String) throws -> Int
    /// Whether the token exists and is not revoked.
    func isActive(token: String) throws -> Bool

    // MARK: households
    func household(id: String) throws -> HouseholdRecord?
    /// The household's owner and `account`'s participant row (nil: no such household).
    func accessRecord(household: String, account: String) throws -> AccessRecord?
    /// Households `account` owns or has accepted, by creation order after the position `after`.
    func households(account: String, after: Int64?, limit: Int) throws -> KeyedPage<HouseholdListing, Int64>
    /// How many households `owner` owns (for the per-account quota).
    func householdCount(owner: String) throws -> Int

    // MARK: children and transactions
    func child(household: String, id: String) throws -> Child?
    /// The child's cached balance (nil: no such child), without reading the whole child.
    func balance(household: String, child: String) throws -> Int64?
    /// By sort order, then creation, then id.
    func children(household: String, includeArchived: Bool) throws -> [Child]
    /// How many children the household holds, archived ones included (for the quota).
    func childCount(household: String) throws -> Int
    /// The transaction `id`; `reversalId` is the reversal id of `id` when the caller has
    /// it already (computed once per record, off the writer), nil to have it computed.
    func transaction(household: String, id: String, reversalId: String?) throws -> LedgerTransaction?
    /// `transaction(household:id:reversalId:)` and `balance(household:child:)` read
    /// together (one round trip where a statement costs one).
    func transactionAndBalance(household: String, id: String, reversalId: String?,
                               child: String) throws -> (LedgerTransaction?, Int64?)
    /// `accessRecord(household:account:)` and, when the household exists,
    /// `transactionAndBalance(…)`, read together.
    func accessAndTransaction(household: String, account: String, id: String, reversalId: String?,
                              child: String) throws -> (AccessRecord?, LedgerTransaction?, Int64?)
    /// The transaction whose reversal would take `id` (ids reserved for reversals).
    func transaction(household: String, reservingReversalId id: String) throws -> LedgerTransaction?
    /// Newest first, before the position `before`; `child` nil: the whole household.
    func transactions(household: String, child: String?, before: Int64?, limit: Int) throws -> KeyedPage<LedgerTransaction, Int64>
    /// The child's newest transaction that is neither a reversal nor reversed.
    func newestUndoable(household: String, child: String) throws -> LedgerTransaction?

    // MARK: schedules
    /// The schedule `id`, a deleted one included.
    func schedule(household: String, id: String) throws -> ScheduleRecord?
    /// The schedules of `ids` that exist (deleted ones included), in any order: the job's
    /// read of a household's due schedules, one statement where the backend can.
    func schedules(household: String, ids: [String]) throws -> [ScheduleRecord]
    /// The child's schedules that are not deleted, by creation time then id, after `after`.
    func schedules(household: String, child: String, after: TimeAndIdPosition?, limit: Int) throws -> KeyedPage<ScheduleRecord, TimeAndIdPosition>
    /// How many schedules the child has that are not deleted.
    func scheduleCount(household: String, child: String) throws -> Int
    /// The sum of the child's transactions created before `beforeMs` (the balance at that
    /// instant, as interest reads it).
    func balance(household: String, child: String, createdBefore beforeMs: Int64) throws -> Int64
    /// Schedules of any household with a date due at `atMs`, the longest due first, at most `limit`.
    func dueSchedules(atMs: Int64, limit: Int) throws -> [DueSchedule]

    // MARK: pots
    /// The stored pot `id`, a deleted one included, with its balance (nil: no row; a
    /// default pot nobody edited has none).
    func pot(household: String, id: String) throws -> PotRecord?
    /// The child's stored pots that are not deleted, with their balances, by creation time
    /// then id, after `after`.
    func pots(household: String, child: String, after: TimeAndIdPosition?, limit: Int) throws -> KeyedPage<PotRecord, TimeAndIdPosition>
    /// The sum of the child's transactions in pot `pot` (nil: the default pot).
    func potBalance(household: String, child: String, pot: String?) throws -> Int64

    // MARK: sharing
    func participant(household: String, account: String) throws -> Participant?
    /// The participant row holding `invitation`, only when it is addressed to `account`.
    func participant(invitation: String, account: String) throws -> Participant?
    /// In invitation order.
    func participants(household: String) throws -> [Participant]
    /// Invitations addressed to `account` still pending in shared households, newest first,
    /// after the position `after`.
    func pendingInvitations(account: String, after: InvitationPosition?, limit: Int) throws -> KeyedPage<Invitation, InvitationPosition>
    /// Pending invitations out from `inviter`'s households, waiting for `invitee` in any
    /// household, and out from `inviter`'s households to `invitee`. In a write, concurrent
    /// invitations involving either account wait until this transaction ends, so a quota
    /// checked on these counts holds.
    func pendingInvitationCounts(inviter: String, invitee: String) throws -> PendingInvitationCounts
    /// The households of `inviter` where `invitee` has a pending invitation.
    func pendingInvitationHouseholds(inviter: String, invitee: String) throws -> [String]
    /// Whether `account` blocked `blocked`.
    func isBlocked(account: String, blocked: String) throws -> Bool
    /// The accounts `account` blocked, newest block first (by time, then account id),
    /// before the position `before`.
    func blocks(account: String, before: TimeAndIdPosition?, limit: Int) throws -> KeyedPage<BlockRecord, TimeAndIdPosition>

    // MARK: sync
    /// The household's feed position (nil: no such household).
    func head(household: String) throws -> FeedHead?
    /// The database's incarnation (`database_incarnation`).
    func databaseIncarnation() throws -> Int64
    /// Children and transactions with `seq > after` (or `seq == onlySeq`), each kind
    /// oldest change first; at most `limit` of each kind.
    func changes(household: String, after: Int64, onlySeq: Int64?, limit: Int) throws -> FeedChanges
    /// The ids of the household's transactions (of `child` only, when given), each with its
    /// child's id, in no particular order (for reconciliation's summaries).
    func transactionIds(household: String, child: String?) throws -> [(childId: String, id: String)]
    /// Devices of current members that synced this household, with how far behind they
    /// are, by account id then token id, after the position `after`.
    func devices(household: String, after: DevicePosition?, limit: Int) throws -> KeyedPage<DeviceSyncRecord, DevicePosition>

    // MARK: - App Store subscriptions
    // (rules over these: `LedgerStorage+Subscriptions.swift`)
    /// The household's registered subscription with its purchase's newest event.
    func subscription(household: String) throws -> SubscriptionRecord?
    /// A purchase by its environment and original transaction id. Inside a write it stays
    /// locked until the commit, so events of one purchase are ordered one after another.
    func purchase(_ key: PurchaseKey) throws -> StoredPurchase?
    /// The households whose subscription is this purchase, by id.
    func households(subscribedTo key: PurchaseKey) throws -> [String]
    /// Whether a notification with this `notificationUUID` is remembered.
    func notificationSeen(uuid: String) throws -> Bool

    // MARK: operations
    /// The newest schema migration applied (a read that needs the database to answer).
    func schemaVersion() throws -> Int
}

extension LedgerReading {
    package func transaction(household: String, id: String) throws -> LedgerTransaction? {
        try transaction(household: household, id: id, reversalId: nil)
    }

    package func transactionAndBalance(household: String, id: String, reversalId: String?,
                               child: String) throws -> (LedgerTransaction?, Int64?) {
        (try transaction(household: household, id: id, reversalId: reversalId), try balance(household: household, child: child))
    }

    package func accessAndTransaction(household: String, account: String, id: String, reversalId: String?,
                              child: String) throws -> (AccessRecord?, LedgerTransaction?, Int64?) {
        guard let access = try accessRecord(household: household, account: account) else { return (nil, nil, nil) }
        let (t, balance) = try transactionAndBalance(household: household, id: id, reversalId: reversalId, child: child)
        return (access, t, balance)
    }
}

extension LedgerReading {
    package func schedules(household: String, ids: [String]) throws -> [ScheduleRecord] {
        try ids.compactMap { try schedule(household: household, id: $0) }
    }
}

extension LedgerWriting {
    package func insertTransactionIfAbsent(_ t: LedgerTransaction, reversalId: String) throws -> Bool { false }
    package func insertsBeforeLookup(household: String) -> Bool { false }
    package func expectNewTransactions(household: String, ids: [String]) throws {}
    package func lockHouseholds(_ ids: [String]) throws {}
}

/// What a write body may do, on top of reading. Callers go through the rules in
/// `LedgerWriting+Rules.swift`; these primitives do no checking of their own beyond the
/// database's constraints.
package protocol LedgerWriting: LedgerReading, AccountAccessWriting, ChildDeviceWriting {
    /// The changes of this write are made by the device holding `token` (`StorageCommit.author`):
    /// they wake every other device of the household, not that one.
    func attributeChanges(to token: String)

    // MARK: accounts and tokens
    /// The rules looked the handle up first; a handle taken meanwhile by a concurrent write
    /// fails on the database's unique key (and the write runs again where it may).
    func insertAccount(_ account: AccountRecord) throws
    func insertToken(_ token: TokenRecord, hash: [UInt8]) throws
    /// Whether an active token of `account` was revoked.
    func revokeToken(id: String, account: String, at: Int64) throws -> Bool
    /// Holds the accounts' invitation state (pending invitations, blocks, tokens) until the
    /// transaction ends: a concurrent write that holds any of them waits. Taken before any
    /// household of the write, in one order everywhere (no two writes wait for each other
    /// in a circle). A no-op where writes run one at a time.
    func lockAccounts(_ ids: [String]) throws

    // MARK: households
    /// Advances the household's change sequence and returns the new value (the household
    /// counts as touched: its long-polls wake after the commit).
    func nextSeq(household: String) throws -> Int64
    /// The rules looked the id up first (as for `insertAccount`).
    func insertHousehold(_ h: HouseholdRecord, incarnation: Int64) throws
    func updateHousehold(id: String, name: String, currency: String, shared: Bool, modifiedAt: Int64, seq: Int64) throws
    func deleteHousehold(id: String) throws

    // MARK: children and transactions
    func insertChild(_ c: Child, seq: Int64) throws
    func updateChild(_ c: Child, seq: Int64) throws
    /// `reversalId`: the reversal id of `t.id` (reserved while `t` is not a reversal).
    func insertTransaction(_ t: LedgerTransaction, reversalId: String, seq: Int64) throws
    /// Inserts `t`, a new transaction that reverses none, with the household's next seq,
    /// unless a transaction already holds its key (`t.householdId`, `reversalId`). Answers
    /// whether it did; false leaves everything as it was (no seq taken, nothing written).
    /// For a backend that reaches the key as cheaply through the insert as through a
    /// lookup, so that a new transaction, the common write, needs no lookup before it;
    /// called only when `insertsBeforeLookup(household:)` said so.
    func insertTransactionIfAbsent(_ t: LedgerTransaction, reversalId: String) throws -> Bool
    /// Whether a new transaction of `household` should try `insertTransactionIfAbsent`
    /// before anything is looked up (false: look it up first; the default).
    func insertsBeforeLookup(household: String) -> Bool
    /// Says that this write is about to add transactions with these ids to `household`
    /// (the job's payments, a push's transactions): a backend whose every lookup is a round trip may look them all
    /// up now, in one statement, and answer the lookups of `addTransaction` that follow for
    /// ids found free (no transaction holds them as its id or its reserved reversal id)
    /// without a statement each, while it holds the household's lock. A hint: the default
    /// does nothing.
    func expectNewTransactions(household: String, ids: [String]) throws
    /// Locks the households' rows, in one order everywhere (their ids sorted, as a group
    /// commit's batch takes them), before a write that touches them all (the job's payments
    /// of several households): no two such writes wait for each other in a circle. A no-op
    /// (the default) where writes run one at a time or lock as they go.
    func lockHouseholds(_ ids: [String]) throws
    func markReversed(household: String, id: String, by reversal: String, seq: Int64) throws
    func setBalance(household: String, child: String, cents: Int64) throws

    // MARK: schedules
    /// A new schedule, stamped with `seq`.
    func insertSchedule(_ s: ScheduleRecord, seq: Int64) throws
    /// Replaces the stored schedule; stamps it with `seq` (nil: a change devices need not
    /// pull, such as the dates the job settled).
    func updateSchedule(_ s: ScheduleRecord, seq: Int64?) throws

    // MARK: pots
    /// A new pot row, stamped with `seq`.
    func insertPot(_ p: PotRecord, seq: Int64) throws
    /// Replaces the stored pot and stamps it with `seq`.
    func updatePot(_ p: PotRecord, seq: Int64) throws

    // MARK: sharing
    func insertParticipant(household: String, account: String, permission: Membership.Permission,
                           invitation: String, at: Int64) throws
    /// Sets a participant's status (and permission; a new invitation id when given, which
    /// also clears its acceptance). Accepting stamps the first acceptance.
    func updateParticipant(household: String, account: String, status: Participant.Status,
                           permission: Membership.Permission?, newInvitation: String?, at: Int64) throws
    /// Revokes every invited or accepted participant.
    func revokeParticipants(household: String, at: Int64) throws
    /// `account` blocks `blocked` from `at`; false when it already did (nothing changes).
    func insertBlock(account: String, blocked: String, at: Int64) throws -> Bool
    /// Whether `account` had blocked `blocked` (the block is lifted).
    func deleteBlock(account: String, blocked: String) throws -> Bool

    // MARK: sync
    /// Only while the household exists.
    func recordPull(token: String, household: String, seq: Int64, at: Int64) throws
    func recordPush(token: String, household: String, at: Int64) throws
    /// Marks a record (`kind` child or transaction) as pushed back by `by`, the owner, in its
    /// author's name after the server went back in time (once; later marks are ignored).
    func markRestored(household: String, kind: String, id: String, by: String, at: Int64) throws

    // MARK: - App Store subscriptions
    /// Registers `upload`'s purchase for the household (replacing what it had), as verified
    /// at `at` for the owner `grantedBy`.
    func setSubscription(household: String, upload: PurchaseEvent, grantedBy: String, at: Int64) throws
    /// Whether the household had a subscription to delete.
    func deleteSubscription(household: String) throws -> Bool
    /// A purchase's first event (a concurrent first insert of the same purchase fails).
    func insertPurchase(_ event: PurchaseEvent, at: Int64) throws
    /// Replaces the stored event of the event's purchase (`PurchaseEvent.purchaseKey`).
    func updatePurchase(_ event: PurchaseEvent, at: Int64) throws
    /// Remembers a notification (a concurrent insert of the same UUID fails).
    func insertNotification(_ n: NotificationRecord, outcome: NotificationOutcome, at: Int64) throws
    /// Forgets notifications received before `cutoff`.
    func deleteNotifications(receivedBefore cutoff: Int64) throws
    /// Forgets purchases that no household registered and that last changed before `cutoff`.
    func deleteUnregisteredPurchases(updatedBefore cutoff: Int64) throws
}
