import LedgerModel

/// The caller's standing in a household.
struct Membership: Sendable {
    enum Role: String, Sendable { case owner, participant }
    enum Permission: String, Sendable { case readWrite, readOnly }
    /// What an operation needs of the caller (see `LedgerReading.membership`).
    enum Need: Sendable { case read, write, owner }

    let householdId: String
    let role: Role
    let permission: Permission
    let ownerAccountId: String

    var canWrite: Bool { permission == .readWrite }

    var accessJSON: JSONValue { .object(["role": .string(role.rawValue), "permission": .string(permission.rawValue)]) }
}
