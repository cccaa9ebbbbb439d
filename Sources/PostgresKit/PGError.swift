#if Postgres
/// A PostgreSQL failure, classified by what a caller can do about it.
public struct PGError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The connection is gone (network, server crash, connect refused). Nothing sent
        /// on it is known to have happened unless it committed before.
        case connectionLost
        /// The server is shutting down or starting (57P01 admin_shutdown, 57P02, 57P03).
        case adminShutdown
        /// 23505: a unique constraint refused the row (`constraint` names it).
        case uniqueViolation
        /// 40001: the transaction lost a serialization race; run it again.
        case serializationFailure
        /// 40P01: the transaction was chosen as a deadlock victim; run it again.
        case deadlock
        /// 55P03: NOWAIT or lock_timeout found the lock taken.
        case lockNotAvailable
        /// 57014: statement_timeout or a cancel request ended the statement.
        case queryCanceled
        /// No connection of the pool came free within its acquire timeout.
        case poolTimeout
        /// A parameter could not be encoded (not a uuid, timestamp out of range).
        case invalidParameter
        /// Anything else (syntax, other constraints, …): a bug or bad data, not transient.
        case other
    }

    public var kind: Kind
    public var message: String
    /// The five-character SQLSTATE, when the server sent one.
    public var sqlState: String?
    /// The constraint a violation named.
    public var constraint: String?
    /// The connection died while COMMIT was in flight: the transaction may or may not have
    /// committed.
    public var commitOutcomeUnknown = false
    /// The failed statement's `PGConnection.tag` (statements sent in one round trip only).
    public var statementTag: Int?

    public init(kind: Kind, message: String, sqlState: String? = nil, constraint: String? = nil) {
        self.kind = kind
        self.message = message
        self.sqlState = sqlState
        self.constraint = constraint
    }

    /// The kind a SQLSTATE stands for.
    public static func kind(sqlState: String) -> Kind {
        switch sqlState {
        case "23505": return .uniqueViolation
        case "40001": return .serializationFailure
        case "40P01": return .deadlock
        case "55P03": return .lockNotAvailable
        case "57014": return .queryCanceled
        case "57P01", "57P02", "57P03": return .adminShutdown
        default: return sqlState.hasPrefix("08") ? .connectionLost : .other
        }
    }

    /// Running the whole transaction again may succeed (a lost race, not a bad request).
    public var isRetryableTransaction: Bool { kind == .serializationFailure || kind == .deadlock }

    /// The database is unreachable for now: answer "unavailable" and reconnect.
    public var isUnavailable: Bool { kind == .connectionLost || kind == .adminShutdown || kind == .poolTimeout }

    public var description: String {
        var s = "PostgreSQL error"
        if let sqlState { s += " \(sqlState)" }
        s += " (\(kind)): \(message)"
        if commitOutcomeUnknown { s += " [commit outcome unknown]" }
        return s
    }
}
#endif
