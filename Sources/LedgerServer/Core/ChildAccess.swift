import LedgerCore
import LedgerModel

/// What a route lets a child token do, declared with the route in `Routes.swift` (the
/// `child:` argument). A child token (a child's paired device) belongs to no account and
/// sees one child of one household (`ChildScope`); every route refuses it unless the route
/// says otherwise, before its handler reads anything:
///
/// - a read (GET) is 404 `not_found`, as for a non-member: nothing outside the child's
///   scope is revealed, not even whether it exists;
/// - a write is 403 `read_only` when it names the child's own household (whichever child
///   or record it names: the answer is the same for every id), or names no household at
///   all (account routes: a child token creates no tokens, link codes, households or
///   invitations); a write to another household is 404, as for a non-member.
///
/// A route that declares `.reads` lets a child token GET it when the path's `{id}` is the
/// child's household and its `{childId}`, if it has one, is the child; its handler then
/// reads through `LedgerReading.readAccess(household:caller:child:)`, and a handler that
/// finds a record by its own id (a transaction, a schedule) answers 404 for a record of
/// another child (`Caller.maySee(child:)`). `.writes` does the same for a POST (the
/// child's requests). `.ownToken` lets a child token write a `/v1/tokens/{tokenId}/…` route
/// (its push registration); the rules then accept only its own token id and answer 404 for
/// any other, as for another account's token.
enum ChildAccess: Sendable {
    case none
    case reads
    case writes
    case ownToken

    /// Whether `caller` (a child token) may go on to the handler of a route with this
    /// access; else the refusal described above.
    func admit(_ scope: ChildScope, method: String, params: PathParameters) throws {
        let household = params.lowercaseID("id")
        let inScope = household != nil && household == scope.householdId
            && (params.names.contains("childId") == false || params.lowercaseID("childId") == scope.childId)
        let isRead = method == "GET" || method == "HEAD"
        switch self {
        case .reads where isRead && inScope: return
        case .writes where !isRead && inScope: return
        case .ownToken where !isRead && params.names.contains("tokenId"): return
        default: break
        }
        if isRead { throw APIError.notFound() }
        if household == nil && !params.names.contains("id") { throw ChildAccess.refused }
        if household == scope.householdId { throw ChildAccess.refused }
        throw APIError.notFound()
    }

    /// The answer to a write a child token may not make.
    static let refused = APIError(403, "read_only", "A child's device may only read and make requests.")
}
