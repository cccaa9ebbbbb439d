import LedgerCore
import LedgerModel

extension AccountAccessError {
    /// The problem+json answer for this refusal.
    var apiError: APIError {
        switch self {
        case .notAParticipant:
            return APIError(422, "not_a_participant",
                            "A household can be handed only to one of its accepted participants with readWrite permission.")
        case .confirmationMismatch:
            return APIError(422, "confirmation_mismatch", "confirmHandle is not this account's handle.")
        case .ownerOfSharedHousehold(let ids):
            var e = APIError(409, "owner_of_shared_household",
                             "This account owns households other parents use: hand them over (POST /v1/households/{id}/owner), "
                             + "or ask to delete them with \"ownedSharedHouseholds\": \"delete\".")
            e.extra["households"] = .array(ids.map { .string($0) })
            return e
        }
    }
}
