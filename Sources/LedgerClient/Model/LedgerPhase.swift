/// Where the device's ledger stands with respect to the server. Persisted, so a relaunch
/// continues an interrupted migration or join from the same step.
enum LedgerPhase: Sendable, Equatable {
    /// No server involved: nothing is queued.
    case localOnly
    /// `share enable` is under way.
    case sharing(SharePhase)
    /// `join` is under way for this invitation and household; an empty `invitationId` is
    /// the opening of a household the account already belongs to (a new device of the account),
    /// which has no invitation to accept and starts at `fetching`.
    case joining(JoinPhase, invitationId: String, householdId: String)
    /// The ledger is a replica of a server household; edits are queued and synced.
    case shared

    /// The steps of enabling sharing on a local ledger, in order.
    enum SharePhase: String, Sendable, CaseIterable {
        /// Every local record has been queued for upload.
        case staged
        /// The household exists on the server with the device's id.
        case householdCreated
        /// Every staged record has been pushed.
        case uploaded
    }

    /// The steps of joining a household, in order.
    enum JoinPhase: String, Sendable, CaseIterable {
        /// The invitation is being accepted.
        case accepting
        /// Accepted; the first full fetch has not yet been imported.
        case fetching
    }

    /// True when edits must be queued for the server.
    var queuesChanges: Bool {
        switch self {
        case .localOnly, .joining: return false
        case .sharing, .shared: return true
        }
    }

    /// The persisted text form.
    var storageValue: String {
        switch self {
        case .localOnly: return "localOnly"
        case .sharing(let p): return "sharing:\(p.rawValue)"
        case .joining(let p, let inv, let hh): return "joining:\(p.rawValue):\(inv):\(hh)"
        case .shared: return "shared"
        }
    }

    /// Parses `storageValue`; unknown text reads as `.localOnly`.
    init(storageValue: String) {
        let parts = storageValue.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        switch parts.first {
        case "shared": self = .shared
        case "sharing":
            self = parts.count == 2 ? (SharePhase(rawValue: parts[1]).map { .sharing($0) } ?? .localOnly) : .localOnly
        case "joining" where parts.count == 4:
            if let p = JoinPhase(rawValue: parts[1]) {
                self = .joining(p, invitationId: parts[2], householdId: parts[3])
            } else { self = .localOnly }
        default: self = .localOnly
        }
    }
}
